// Reading text and JSONL documents (see documents.hpp).
#include "text/documents.hpp"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/data_paths.hpp"
#include "common/error.hpp"
#include "common/strict_json.hpp"

namespace fabtrain::text {
namespace {

bool is_jsonl(const std::string& path) {
  const std::string ext = std::filesystem::path(path).extension().string();
  return ext == ".jsonl" || ext == ".ndjson";
}

void read_jsonl(const std::string& path, const DocumentFields& fields,
                const std::function<void(Document&&)>& each) {
  std::ifstream in(path);
  if (!in) fail("{}: cannot open", path);
  std::string line;
  int line_no = 0, documents = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;  // blank lines separate nothing
    const nlohmann::json j = parse_json_strict(line, fmt::format("{}:{}", path, line_no));
    if (!j.is_object())
      fail("{}:{}: expected a JSON object with a \"{}\" field", path, line_no, fields.text);
    auto text = j.find(fields.text);
    if (text == j.end() || !text->is_string())
      fail("{}:{}: no string field \"{}\" (choose the field with --text-field)", path, line_no,
           fields.text);
    Document doc{path, line_no, fmt::format("{}:{}", path, line_no), text->get<std::string>()};
    if (doc.text.empty()) fail("{}:{}: field \"{}\" is empty", path, line_no, fields.text);
    if (auto id = j.find(fields.id); id != j.end())
      doc.id = id->is_string() ? id->get<std::string>() : id->dump();
    ++documents;
    each(std::move(doc));
  }
  if (in.bad()) fail("{}: read error", path);
  if (documents == 0) fail("{}: no documents (an empty JSONL file)", path);
}

}  // namespace

std::vector<std::string> document_paths(const std::vector<std::string>& patterns) {
  return expand_data_paths(patterns);
}

void read_documents(const std::vector<std::string>& paths, const DocumentFields& fields,
                    const std::function<void(Document&&)>& each) {
  for (const std::string& path : paths) {
    if (is_jsonl(path)) {
      read_jsonl(path, fields, each);
      continue;
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) fail("{}: cannot open", path);
    std::stringstream ss;
    ss << in.rdbuf();
    Document doc{path, 0, path, ss.str()};
    if (doc.text.empty()) fail("{}: empty file (no document)", path);
    each(std::move(doc));
  }
}

std::string first_line(const std::string& text, std::size_t max_chars) {
  std::size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string::npos) return "";
  std::size_t end = text.find('\n', start);
  std::string line = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
  if (line.size() > max_chars) {
    std::size_t cut = max_chars;
    while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80)
      --cut;  // not mid-character
    line = line.substr(0, cut) + "...";
  }
  return line;
}

}  // namespace fabtrain::text
