// Strict field reading for the platform YAML files (see yaml_fields.hpp).
#include "platforms/yaml_fields.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "common/error.hpp"
#include "common/strict_number.hpp"

namespace fabtrain {
namespace {

std::string kind_name(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null:
      return "nothing";
    case YAML::NodeType::Scalar:
      return "a scalar '" + n.Scalar() + "'";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    default:
      return "undefined";
  }
}

// The offset of the first byte that is not UTF-8 text (or is a control character other than tab,
// newline and carriage return), or npos. yaml-cpp 0.7 loops without end on some invalid bytes.
std::size_t first_non_text(const std::string& s) {
  for (std::size_t i = 0; i < s.size();) {
    const unsigned char c = s[i];
    if (c < 0x80) {
      if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) return i;
      ++i;
      continue;
    }
    const int extra = (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 : (c & 0xf8) == 0xf0 ? 3 : -1;
    if (extra < 0 || c == 0xc0 || c == 0xc1 || c > 0xf4) return i;
    for (int k = 1; k <= extra; ++k)
      if (i + k >= s.size() || (static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return i;
    i += std::size_t(extra) + 1;
  }
  return std::string::npos;
}

// yaml-cpp 0.7 (Debian 12's) also loops without end on some malformed flow collections (found by
// the fuzzer, tests/fuzz/regressions/slice/). So the text is parsed first in a child process that
// is killed after kParseSeconds; only text that parses there in time is parsed here. The files are
// a few KiB and parse in milliseconds.
constexpr unsigned kParseSeconds = 3;

// "" when yaml-cpp finishes on text (either way) within kParseSeconds, else why not.
std::string parse_would_hang(const std::string& text) {
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  if (pid < 0) return "";  // cannot tell: parse here as before
  if (pid == 0) {
    std::signal(SIGALRM,
                SIG_DFL);  // whatever the parent installed (libFuzzer does), it ends the child
    ::alarm(kParseSeconds);
    try {
      (void)YAML::LoadAll(text);
    } catch (...) {
    }
    ::_exit(0);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
    return fmt::format("the YAML parser did not finish within {} s (malformed brackets or braces?)",
                       kParseSeconds);
  return "";
}

// fabtrain's YAML files are a few KiB; a larger one is not one of them.
constexpr std::uintmax_t kMaxYamlBytes = 4 << 20;

}  // namespace

YamlFields::YamlFields(std::string file, std::string where, const YAML::Node& node)
    : file_(std::move(file)), where_(std::move(where)), node_(node) {
  if (!node_.IsMap())
    fail("{}: {}: expected a mapping of keys to values, found {}", file_,
         where_.empty() ? "top level" : where_, kind_name(node_));
  // yaml-cpp keeps both entries of a repeated key and lookups see only the first: refuse them.
  std::vector<std::string> seen;
  for (const auto& kv : node_) {
    if (!kv.first.IsScalar())
      fail("{}: {}: a key must be a plain name, found {}", file_,
           where_.empty() ? "top level" : where_, kind_name(kv.first));
    const std::string key = kv.first.Scalar();
    if (std::find(seen.begin(), seen.end(), key) != seen.end())
      fail("{}: duplicate key (it appears twice)", field(key));
    seen.push_back(key);
  }
}

std::string YamlFields::field(const std::string& key) const {
  return fmt::format("{}: {}{}", file_, where_.empty() ? "" : where_ + ".", key);
}

void YamlFields::allow_only(std::initializer_list<const char*> known) const {
  for (const auto& kv : node_) {
    const std::string key = kv.first.Scalar();
    bool ok = false;
    for (const char* k : known) ok = ok || key == k;
    if (!ok) {
      std::string list;
      for (const char* k : known) list += (list.empty() ? "" : ", ") + std::string(k);
      fail("{}: unknown key (known keys here: {})", field(key), list);
    }
  }
}

bool YamlFields::has(const std::string& key) const { return bool(node_[key]); }

YAML::Node YamlFields::scalar(const std::string& key, const char* expected) const {
  YAML::Node n = node_[key];
  if (!n) fail("{}: missing (expected {})", field(key), expected);
  if (!n.IsScalar()) fail("{}: expected {}, found {}", field(key), expected, kind_name(n));
  return n;
}

std::string YamlFields::text(const std::string& key) const {
  return scalar(key, "a string").Scalar();
}

std::string YamlFields::text_or(const std::string& key, const std::string& fallback) const {
  return has(key) ? text(key) : fallback;
}

double YamlFields::number(const std::string& key) const {
  return strict_finite(scalar(key, "a number").Scalar(), field(key));
}

double YamlFields::number_or(const std::string& key, double fallback) const {
  return has(key) ? number(key) : fallback;
}

int YamlFields::integer(const std::string& key) const {
  return strict_int(scalar(key, "an integer").Scalar(), field(key), INT_MIN, INT_MAX);
}

int YamlFields::integer_or(const std::string& key, int fallback) const {
  return has(key) ? integer(key) : fallback;
}

bool YamlFields::flag_or(const std::string& key, bool fallback) const {
  if (!has(key)) return fallback;
  YAML::Node n = scalar(key, "true or false");
  try {
    return n.as<bool>();
  } catch (const YAML::Exception&) {
    fail("{}: expected true or false, found '{}'", field(key), n.Scalar());
  }
}

std::vector<std::string> YamlFields::text_list_or(const std::string& key) const {
  std::vector<std::string> out;
  YAML::Node n = node_[key];
  if (!n) return out;
  if (!n.IsSequence()) fail("{}: expected a list of strings, found {}", field(key), kind_name(n));
  for (std::size_t i = 0; i < n.size(); ++i) {
    if (!n[i].IsScalar())
      fail("{}[{}]: expected a string, found {}", field(key), i, kind_name(n[i]));
    out.push_back(n[i].Scalar());
  }
  return out;
}

YAML::Node YamlFields::mapping(const std::string& key) const {
  YAML::Node n = node_[key];
  if (!n) fail("{}: missing (expected a mapping)", field(key));
  if (!n.IsMap()) fail("{}: expected a mapping, found {}", field(key), kind_name(n));
  return n;
}

YAML::Node YamlFields::sequence_or_empty(const std::string& key) const {
  YAML::Node n = node_[key];
  if (!n || n.IsNull()) return YAML::Node(YAML::NodeType::Sequence);  // "key:" with nothing after
  if (!n.IsSequence()) fail("{}: expected a list, found {}", field(key), kind_name(n));
  return n;
}

YAML::Node load_yaml_file(const std::string& path, const std::string& what) {
  if (!std::filesystem::is_regular_file(path)) fail("{} file not found: {}", what, path);
  const std::uintmax_t size = std::filesystem::file_size(path);
  if (size > kMaxYamlBytes)
    fail("{}: {} bytes; fabtrain handles {} files of at most {} bytes (they hold a few KiB)", path,
         size, what, kMaxYamlBytes);
  std::ifstream in(path, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (const std::size_t at = first_non_text(text); at != std::string::npos)
    fail("{}: byte {} (0x{:02x}) is not UTF-8 text; a {} file is YAML text", path, at,
         static_cast<unsigned char>(text[at]), what);
  if (const std::string why = parse_would_hang(text); !why.empty())
    fail("{}: not valid YAML: {}", path, why);
  std::vector<YAML::Node> documents;
  try {
    documents = YAML::LoadAll(text);
  } catch (const YAML::Exception& e) {
    fail("{}: not valid YAML: {}", path, e.what());
  }
  if (documents.size() > 1)
    fail("{}: holds {} YAML documents (separated by ---); a {} file is one", path, documents.size(),
         what);
  return documents.empty() ? YAML::Node() : documents.front();
}

}  // namespace fabtrain
