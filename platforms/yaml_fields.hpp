// Strict reading of one YAML mapping of a platform file (catalog or slice): every field read
// names the file and its place in it ("slices/x.yaml: vms[1].gpus"), wrong types and unknown keys
// are errors. For platforms/ and the files that describe hardware like them (calibrate/'s
// published runs); not a general YAML wrapper. The tree comes from common/yaml_tree.hpp, which
// has already refused repeated keys, second documents and aliases.
#pragma once
#include <initializer_list>
#include <string>
#include <vector>

#include "common/yaml_tree.hpp"

namespace fabtrain {

class YamlFields {
 public:
  // `where` is the mapping's place in the file ("" for the top level); node must be a mapping.
  YamlFields(std::string file, std::string where, const YamlNode& node);

  // Rejects any key not in `known`, naming it and listing the known ones.
  void allow_only(std::initializer_list<const char*> known) const;
  bool has(const std::string& key) const;

  std::string text(const std::string& key) const;  // required
  std::string text_or(const std::string& key, const std::string& fallback) const;
  double number(const std::string& key) const;  // required
  double number_or(const std::string& key, double fallback) const;
  int integer(const std::string& key) const;  // required
  int integer_or(const std::string& key, int fallback) const;
  bool flag_or(const std::string& key, bool fallback) const;
  std::vector<std::string> text_list_or(const std::string& key) const;  // empty when absent

  // A nested mapping or sequence, checked for its kind.
  YamlNode mapping(const std::string& key) const;
  YamlNode sequence_or_empty(const std::string& key) const;

  // "file: where.key" for messages about a field.
  std::string field(const std::string& key) const;
  const std::string& file() const { return file_; }
  const std::string& where() const { return where_; }
  const YamlNode& node() const { return node_; }

 private:
  YamlNode scalar(const std::string& key, const char* expected) const;

  std::string file_;
  std::string where_;
  YamlNode node_;
};

}  // namespace fabtrain
