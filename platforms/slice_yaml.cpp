#include "platforms/slice_yaml.hpp"

#include <yaml-cpp/yaml.h>

#include "common/atomic_file.hpp"
#include "common/error.hpp"

namespace fabtrain {

std::string to_slice_yaml(const SliceDraft& s) {
  YAML::Emitter y;
  if (!s.comment.empty()) y << YAML::Comment(s.comment);
  y << YAML::BeginMap;
  y << YAML::Key << "name" << YAML::Value << s.name;
  y << YAML::Key << "description" << YAML::Value << s.description;
  y << YAML::Key << "assumptions" << YAML::Value << YAML::BeginSeq;
  for (const auto& a : s.assumptions) y << a;
  y << YAML::EndSeq;
  y << YAML::Key << "vms" << YAML::Value << YAML::BeginSeq;
  for (std::size_t i = 0; i < s.vms.size(); ++i) {
    const Vm& vm = s.vms[i];
    y << YAML::Flow << YAML::BeginMap;
    y << YAML::Key << "name" << YAML::Value << vm.name;
    y << YAML::Key << "site" << YAML::Value << vm.site;
    y << YAML::Key << "gpu" << YAML::Value << vm.gpu;
    y << YAML::Key << "gpus" << YAML::Value << vm.gpus;
    y << YAML::Key << "nic" << YAML::Value << vm.nic;
    if (!vm.host.empty()) y << YAML::Key << "host" << YAML::Value << vm.host;
    if (!vm.address.empty()) y << YAML::Key << "address" << YAML::Value << vm.address;
    y << YAML::EndMap;
    if (i < s.vm_comments.size() && !s.vm_comments[i].empty()) y << YAML::Comment(s.vm_comments[i]);
  }
  y << YAML::EndSeq;
  y << YAML::Key << "networks" << YAML::Value << YAML::BeginSeq;
  for (const auto& n : s.networks) {
    y << YAML::Flow << YAML::BeginMap;
    y << YAML::Key << "name" << YAML::Value << n.name;
    y << YAML::Key << "kind" << YAML::Value << n.kind;
    if (is_two_site_kind(n.kind)) y << YAML::Key << "sites" << YAML::Value << YAML::Flow << n.sites;
    y << YAML::Key << "vms" << YAML::Value << YAML::Flow << n.vms;
    if (!n.subnet.empty()) y << YAML::Key << "subnet" << YAML::Value << n.subnet;
    if (!n.interface.empty()) y << YAML::Key << "interface" << YAML::Value << n.interface;
    y << YAML::EndMap;
  }
  y << YAML::EndSeq;
  y << YAML::EndMap;
  return std::string(y.c_str()) + "\n";
}

Slice write_slice(const SliceDraft& draft, const std::string& path, const Catalog& catalog) {
  write_text_atomically(path, to_slice_yaml(draft), "the slice file");
  try {
    return load_slice(path, catalog);
  } catch (const Error& e) {
    fail("{}: the slice written is not valid: {}", path, e.what());
  }
}

}  // namespace fabtrain
