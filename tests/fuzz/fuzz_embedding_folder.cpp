// libFuzzer target: an embedding folder as search reads it (read_embedding_folder): embed.json,
// documents.jsonl, vectors.npy and index.faiss, given as one input whose parts are separated by
// kSeparator, in that order (a part not given is a file absent). Each input is read twice: as
// given, and with embed.json's SHA-256 of each file replaced by the file's own, so that the
// fuzzer reaches the checks behind the checksums. A folder that reads must hold what search then
// trusts: as many documents as vectors, and hits that name a document with a finite score.
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/strict_json.hpp"
#include "embed/embedding_dir.hpp"
#include "tests/fuzz/fuzz_input.hpp"
#include "text/sha256.hpp"

namespace {

constexpr std::string_view kSeparator = "\n--next file--\n";
const char* const kNames[] = {"embed.json", "documents.jsonl", "vectors.npy", "index.faiss"};

std::vector<std::string> split_parts(std::string_view bytes) {
  std::vector<std::string> parts;
  for (;;) {
    const std::size_t at = bytes.find(kSeparator);
    parts.emplace_back(bytes.substr(0, at));
    if (at == std::string_view::npos || parts.size() == std::size(kNames)) return parts;
    bytes.remove_prefix(at + kSeparator.size());
  }
}

// embed.json with the files' own digests, or unchanged when it is not a JSON object.
std::string with_true_digests(const std::vector<std::string>& parts) {
  try {
    nlohmann::json meta = fabtrain::parse_json_strict(parts[0], "embed.json");
    if (!meta.is_object()) return parts[0];
    meta["sha256"] = nlohmann::json::object();
    for (std::size_t i = 1; i < parts.size(); ++i)
      meta["sha256"][kNames[i]] = fabtrain::text::sha256_hex(parts[i]);
    return meta.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } catch (const fabtrain::Error&) {
    return parts[0];
  }
}

void read_folder(const std::vector<std::string>& parts) {
  std::filesystem::path dir;
  for (std::size_t i = 0; i < std::size(kNames); ++i) {
    const std::string& part = i < parts.size() ? parts[i] : std::string();
    dir = std::filesystem::path(
              fabtrain::fuzz::write_input(reinterpret_cast<const std::uint8_t*>(part.data()),
                                          part.size(), kNames[i]))
              .parent_path();
    if (i >= parts.size()) std::filesystem::remove(dir / kNames[i]);
  }
  fabtrain::fuzz::refused_only_by_error([&] {
    const auto folder = fabtrain::embed::read_embedding_folder(dir.string());
    const auto n = std::int64_t(folder.documents.size());
    if (folder.vectors.rows != n || folder.index->size() != n) __builtin_trap();
    std::vector<float> query(std::size_t(folder.dimension), 0.0f);
    query[0] = 1.0f;
    for (const auto& hit : folder.index->search(query, 5))
      if (hit.row < 0 || hit.row >= n || !std::isfinite(hit.score)) __builtin_trap();
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> parts =
      split_parts(std::string_view(reinterpret_cast<const char*>(data), size));
  read_folder(parts);
  parts[0] = with_true_digests(parts);
  read_folder(parts);
  return 0;
}
