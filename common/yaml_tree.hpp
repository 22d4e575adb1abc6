// YAML text read strictly into a tree of mappings, sequences and scalars, each node with its line.
// The parser (libfyaml) reads the text once, without recursion, and returns on any input; the tree
// refuses what fabtrain's files never need and a careless edit produces: a key given twice in one
// mapping, a second document, aliases, keys that are not plain names, nesting past kMaxYamlDepth.
// Every refusal names the file, the line and, where there is one, the key's place
// ("slice.yaml: line 7: networks[0].rtt_ms: duplicate key ...").
// Numbers and flags stay text here: readers convert them strictly (common/strict_number.hpp).
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace fabtrain {

// The deepest nesting of mappings and sequences read (fabtrain's files nest five deep).
inline constexpr int kMaxYamlDepth = 64;

class YamlNode {
 public:
  enum class Kind { missing, null, scalar, sequence, mapping };
  using Entry = std::pair<std::string, YamlNode>;

  YamlNode() = default;  // missing: what a lookup of an absent key returns

  Kind kind() const { return data_ ? data_->kind : Kind::missing; }
  explicit operator bool() const { return data_ != nullptr; }  // present (even if null)
  bool is_null() const { return kind() == Kind::null; }
  bool is_scalar() const { return kind() == Kind::scalar; }
  bool is_sequence() const { return kind() == Kind::sequence; }
  bool is_mapping() const { return kind() == Kind::mapping; }

  // A scalar's text as written, quotes and escapes resolved ("" for other kinds).
  const std::string& text() const;
  // 1-based line where the node starts (0 when missing).
  int line() const { return data_ ? data_->line : 0; }
  // "nothing", "a scalar 'x'", "a list", "a mapping" (for messages).
  std::string describe() const;

  // Items of a sequence or entries of a mapping (0 for other kinds).
  std::size_t size() const;
  const std::vector<YamlNode>& items() const;  // empty unless a sequence
  const YamlNode& operator[](std::size_t i) const { return items().at(i); }
  const std::vector<Entry>& entries() const;  // in file order; empty unless a mapping
  // The value under key, or a missing node (also when this is not a mapping).
  YamlNode operator[](const std::string& key) const;

  static YamlNode empty_sequence();

 private:
  friend class YamlTreeBuilder;
  struct Data {
    Kind kind = Kind::null;
    int line = 0;
    std::string text;
    std::vector<YamlNode> items;
    std::vector<Entry> entries;
  };
  explicit YamlNode(std::shared_ptr<Data> d) : data_(std::move(d)) {}
  std::shared_ptr<Data> data_;
};

// Parses `text` of a file of kind `what` ("slice", "catalog"; `file` names it in messages): one
// document, or none (a missing node). A syntax error becomes fabtrain::Error
// "file: not valid YAML: line L, column C: why".
YamlNode parse_yaml(const std::string& text, const std::string& file, const std::string& what);

// Reads and parses a file of kind `what`: a missing file, one past kMaxYamlFileBytes or text that
// is not UTF-8 is refused by name before parsing.
inline constexpr std::size_t kMaxYamlFileBytes = 4 << 20;  // fabtrain's files hold a few KiB
YamlNode load_yaml_file(const std::string& path, const std::string& what);

}  // namespace fabtrain
