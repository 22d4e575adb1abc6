#include "platforms/testbed.hpp"

#include "common/data_dir.hpp"
#include "common/error.hpp"
#include "platforms/catalog.hpp"
#include "platforms/yaml_fields.hpp"

namespace fabtrain {

const TestbedGpu* Testbed::gpu_by_key(const std::string& key) const {
  for (const auto& g : gpus)
    if (g.key == key) return &g;
  return nullptr;
}

namespace {

Testbed load_testbed(const std::string& path, const Catalog& catalog) {
  const YamlFields top(path, "", load_yaml_file(path, "testbed"));
  top.allow_only({"source", "sites", "gpus", "nics", "gpu_vm"});
  Testbed t;
  t.path = path;
  t.source = top.text("source");
  t.sites = top.text_list_or("sites");
  for (const auto& s : t.sites) catalog.site(s);  // throws naming the known sites
  const YamlNode gpus = top.sequence_or_empty("gpus");
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const YamlFields f(path, fmt::format("gpus[{}]", i), gpus[i]);
    f.allow_only({"model", "key", "max_per_vm"});
    TestbedGpu g{f.text("model"), f.text("key"), f.integer("max_per_vm")};
    catalog.gpu(g.model);
    if (g.max_per_vm < 1) fail("{}: must be at least 1", f.field("max_per_vm"));
    t.gpus.push_back(g);
  }
  const YamlNode nics = top.sequence_or_empty("nics");
  for (std::size_t i = 0; i < nics.size(); ++i) {
    const YamlFields f(path, fmt::format("nics[{}]", i), nics[i]);
    f.allow_only({"model", "key"});
    t.nics.push_back({f.text("model"), f.text("key")});
    catalog.nic(t.nics.back().model);
  }
  const YamlFields vm(path, "gpu_vm", top.mapping("gpu_vm"));
  vm.allow_only({"cores", "ram_gb", "disk_gb"});
  t.gpu_vm = {vm.integer("cores"), vm.number("ram_gb"), vm.number("disk_gb")};
  if (t.sites.empty() || t.gpus.empty() || t.nics.empty())
    fail("{}: sites, gpus and nics must each list at least one entry", path);
  return t;
}

}  // namespace

const Testbed& fabric_testbed() {
  static const Testbed testbed =
      load_testbed(source_dir() + "/platforms/data/fabric_testbed.yaml", builtin_catalog());
  return testbed;
}

}  // namespace fabtrain
