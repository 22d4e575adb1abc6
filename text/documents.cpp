// Reading text and JSONL documents (see documents.hpp).
#include "text/documents.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "common/data_paths.hpp"
#include "common/error.hpp"
#include "common/strict_json.hpp"
#include "text/pretokenize.hpp"

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

// A text file as one document, or in parts of at most part_bytes (0: whole).
void read_text_file(const std::string& path, std::size_t part_bytes,
                    const std::function<void(Document&&)>& each) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot open", path);
  if (part_bytes == 0) {
    std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (in.bad()) fail("{}: read error", path);
    if (text.empty()) fail("{}: empty file (no document)", path);
    each(Document{path, 0, path, std::move(text)});
    return;
  }
  part_bytes = std::max<std::size_t>(part_bytes, 8);  // a cut in the second half moves on
  std::string buffer;
  bool continues = false;
  while (true) {
    const std::size_t had = buffer.size();
    buffer.resize(part_bytes);
    in.read(buffer.data() + had, std::streamsize(part_bytes - had));
    buffer.resize(had + std::size_t(in.gcount()));
    if (in.bad()) fail("{}: read error", path);
    const bool last = in.eof();
    const std::size_t cut =
        last ? buffer.size() : next_cut(buffer, buffer.size() / 2, buffer.size() - 1);
    if (cut == 0 && !continues) fail("{}: empty file (no document)", path);
    if (cut > 0) each(Document{path, 0, path, buffer.substr(0, cut), continues});
    if (last) return;
    buffer.erase(0, cut);
    continues = true;
  }
}

}  // namespace

std::vector<std::string> document_paths(const std::vector<std::string>& patterns) {
  return expand_data_paths(patterns);
}

void read_documents(const std::vector<std::string>& paths, const DocumentFields& fields,
                    const std::function<void(Document&&)>& each, std::size_t part_bytes) {
  for (const std::string& path : paths) {
    if (is_jsonl(path))
      read_jsonl(path, fields, each);
    else
      read_text_file(path, part_bytes, each);
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
