// fabtrain slices [--json FILE|-]: the built-in slices (sites, GPU count and types).
// fabtrain slice show NAME|PATH [--json FILE|-]: one slice in full: VMs, sites, GPUs, NICs,
// networks, every site pair's round trip and bandwidth and whether each was measured, estimated or
// given, and the stated assumptions. fabtrain slice import SAVED [-o slice.yaml]: a slice saved by
// fablib as a slice file.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "common/atomic_file.hpp"
#include "common/error.hpp"
#include "common/human_units.hpp"
#include "json_output.hpp"
#include "platforms/fablib_import.hpp"
#include "platforms/slice.hpp"
#include "platforms/slice_generator.hpp"
#include "platforms/slice_yaml.hpp"
#include "platforms/testbed.hpp"

namespace fabtrain {
namespace {

std::string joined(const std::vector<std::string>& list, const char* sep = ", ") {
  std::string out;
  for (const auto& s : list) out += (out.empty() ? "" : sep) + s;
  return out;
}

// "4 x GPU_RTX6000" or "2 x GPU_RTX6000 + 2 x GPU_TeslaT4", types in order of first appearance.
std::vector<std::pair<std::string, int>> gpu_mix(const Slice& s) {
  std::vector<std::pair<std::string, int>> mix;
  for (const auto& vm : s.vms) {
    auto it = std::find_if(mix.begin(), mix.end(), [&](auto& p) { return p.first == vm.gpu; });
    if (it == mix.end())
      mix.push_back({vm.gpu, vm.gpus});
    else
      it->second += vm.gpus;
  }
  return mix;
}

std::string gpu_mix_text(const Slice& s) {
  std::vector<std::string> parts;
  for (const auto& [type, n] : gpu_mix(s)) parts.push_back(fmt::format("{} x {}", n, type));
  return joined(parts, " + ");
}

// Every pair of sites a network joins (one row for a network inside one site), with its round
// trip and bandwidth and whether each was measured, estimated or given.
struct PairRow {
  const Network* network;
  std::string a, b;
  PairValue rtt, bandwidth;
};

std::vector<PairRow> pair_rows(const Slice& s) {
  std::vector<PairRow> rows;
  for (const auto& n : s.networks) {
    if (n.sites.size() == 1)
      rows.push_back({&n, n.sites[0], n.sites[0], s.site_rtt(n, n.sites[0], n.sites[0]),
                      s.site_bandwidth(n, n.sites[0], n.sites[0])});
    for (size_t i = 0; i < n.sites.size(); ++i)
      for (size_t j = i + 1; j < n.sites.size(); ++j)
        rows.push_back({&n, n.sites[i], n.sites[j], s.site_rtt(n, n.sites[i], n.sites[j]),
                        s.site_bandwidth(n, n.sites[i], n.sites[j])});
  }
  return rows;
}

nlohmann::json slice_summary_json(const Slice& s) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& [type, n] : gpu_mix(s)) gpus.push_back({{"type", type}, {"count", n}});
  return {
      {"name", s.name}, {"sites", s.site_names()}, {"gpu_count", s.gpu_count()}, {"gpus", gpus}};
}

void list_slices(const JsonOutput& json) {
  std::vector<Slice> slices;
  for (const auto& name : builtin_slice_names()) slices.push_back(load_slice(name));
  if (json.wanted()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& s : slices) out.push_back(slice_summary_json(s));
    json.write(out);
    if (json.to_stdout()) return;
  }
  fmt::print("{:<16} {:<14} {:>4}  {}\n", "slice", "sites", "gpus", "gpu types");
  for (const auto& s : slices)
    fmt::print("{:<16} {:<14} {:>4}  {}\n", s.name, joined(s.site_names(), "+"), s.gpu_count(),
               gpu_mix_text(s));
}

void show_slice(const std::string& name_or_path, const JsonOutput& json,
                const std::string& extra_catalog) {
  const Slice s = load_slice(name_or_path, catalog_with(extra_catalog));
  const Catalog& cat = *s.catalog;
  if (json.wanted()) {
    nlohmann::json out = slice_summary_json(s);
    out["path"] = s.path;
    out["description"] = s.description;
    out["assumptions"] = s.assumptions;
    for (const auto& vm : s.vms) {
      const GpuType& g = cat.gpu(vm.gpu);
      out["vms"].push_back({{"name", vm.name},
                            {"site", vm.site},
                            {"location", cat.site(vm.site).location},
                            {"gpu", vm.gpu},
                            {"gpu_description", g.description},
                            {"gpus", vm.gpus},
                            {"gpu_memory_bytes", g.memory_bytes},
                            {"nic", vm.nic},
                            {"nic_bandwidth_bytes_per_s", cat.nic(vm.nic).bandwidth},
                            {"interconnect", vm.interconnect},
                            {"host", vm.host}});
    }
    out["networks"] = nlohmann::json::array();
    for (const auto& n : s.networks)
      out["networks"].push_back(
          {{"name", n.name}, {"kind", n.kind}, {"vms", n.vms}, {"sites", n.sites}});
    out["site_pairs"] = nlohmann::json::array();
    for (const auto& r : pair_rows(s))
      out["site_pairs"].push_back({{"network", r.network->name},
                                   {"sites", {r.a, r.b}},
                                   {"rtt_s", r.rtt.value},
                                   {"rtt_origin", r.rtt.origin},
                                   {"rtt_measured", r.rtt.origin == "measured"},
                                   {"rtt_source", r.rtt.source},
                                   {"bandwidth_bytes_per_s", r.bandwidth.value},
                                   {"bandwidth_origin", r.bandwidth.origin},
                                   {"bandwidth_measured", r.bandwidth.origin == "measured"},
                                   {"bandwidth_source", r.bandwidth.source}});
    json.write(out);
    if (json.to_stdout()) return;
  }
  fmt::print("slice {} ({})\n", s.name, s.path);
  if (!s.description.empty()) fmt::print("  {}\n", s.description);
  fmt::print("sites: {}   GPUs: {} ({})\n\n", joined(s.site_names()), s.gpu_count(),
             gpu_mix_text(s));
  fmt::print("{:<12} {:<8} {:<16} {:>4} {:>8} {:<26} {:>9} {:<12} {}\n", "vm", "site", "gpu", "n",
             "mem GiB", "nic", "nic Gb/s", "interconnect", "host");
  for (const auto& vm : s.vms)
    fmt::print("{:<12} {:<8} {:<16} {:>4} {:>8.0f} {:<26} {:>9.0f} {:<12} {}\n", vm.name, vm.site,
               vm.gpu, vm.gpus, cat.gpu(vm.gpu).memory_bytes / (1024.0 * 1024 * 1024), vm.nic,
               cat.nic(vm.nic).bandwidth * 8 / 1e9, vm.interconnect,
               vm.host.empty() ? "-" : vm.host);
  if (!s.networks.empty()) {
    fmt::print("\n{:<18} {:<9} {:<24} {}\n", "network", "kind", "sites", "vms");
    for (const auto& n : s.networks)
      fmt::print("{:<18} {:<9} {:<24} {}\n", n.name, n.kind, joined(n.sites, "+"), joined(n.vms));
    fmt::print("\n{:<18} {:<12} {:>9} {:<11} {:>8} {:<9}\n", "network", "site pair", "rtt ms",
               "rtt is", "Gbit/s", "bw is");
    for (const auto& r : pair_rows(s)) {
      fmt::print("{:<18} {:<12} {:>9.3f} {:<11} {:>8} {:<9}\n", r.network->name,
                 r.a == r.b ? r.a : r.a + "-" + r.b, r.rtt.value * 1e3, r.rtt.origin,
                 r.bandwidth.value > 0 ? fmt::format("{:.2f}", r.bandwidth.value * 8 / 1e9) : "-",
                 r.bandwidth.origin == "nic" ? "nic-bound" : r.bandwidth.origin);
      fmt::print("{:<18} rtt source: {}\n", "", r.rtt.source);
      if (r.bandwidth.origin != "nic")
        fmt::print("{:<18} bandwidth source: {}\n", "", r.bandwidth.source);
    }
  }
  if (!s.assumptions.empty()) {
    fmt::print("\nassumptions:\n");
    for (const auto& a : s.assumptions) fmt::print("  - {}\n", a);
  }
}

Registration list_reg(20, [](CLI::App& app) {
  auto* cmd = app.add_subcommand("slices", "List the built-in slices: sites, GPU count and types");
  auto json = std::make_shared<JsonOutput>();
  json->add_to(cmd, "the list");
  cmd->callback([json] { list_slices(*json); });
});

// Loads the imported slice back as any slice file is loaded (through a temporary file of this
// process), so that what is written is known to be a valid slice, then writes it as every output
// is written: a device or a pipe in place, a file through a temporary renamed over it.
void import_slice(const std::string& saved, const std::string& output,
                  const std::string& extra_catalog) {
  const Catalog& catalog = catalog_with(extra_catalog);
  const ImportedSlice imported = import_fablib_slice(saved, catalog);
  const std::string yaml = to_slice_yaml(imported);
  const bool to_stdout = output.empty() || output == "-";
  const std::string check =
      (std::filesystem::temp_directory_path() / fmt::format("fabtrain-import-{}.yaml", ::getpid()))
          .string();
  {
    std::ofstream out(check);
    if (!(out << yaml)) fail("cannot write '{}'", check);
  }
  try {
    load_slice(check, catalog);
  } catch (const Error& e) {
    std::filesystem::remove(check);
    fail("{}: the imported slice is not valid: {}", saved, e.what());
  }
  std::filesystem::remove(check);
  if (to_stdout)
    fmt::print("{}", yaml);
  else
    write_text_atomically(output, yaml, "-o");
  auto* info = to_stdout ? stderr : stdout;
  fmt::print(info, "imported {} ({}): {} with GPUs, {}{}\n", saved, imported.format,
             counted(imported.vms.size(), "VM"), counted(imported.networks.size(), "network"),
             to_stdout ? "" : " -> " + output);
  for (const auto& l : imported.left_out) fmt::print(info, "  left out: {}\n", l);
}

struct GenerateOptions {
  int sites = 4;
  std::uint64_t seed = 1;
  std::string output;
};

// Writes a generated FABRIC-like slice (platforms/slice_generator.hpp), loaded back to check it.
void generate_slice(const GenerateOptions& o) {
  const SliceDraft draft = generate_fabric_slice(o.sites, o.seed, fabric_testbed());
  if (o.output.empty() || o.output == "-") {
    fmt::print("{}", to_slice_yaml(draft));
    return;
  }
  write_slice(draft, o.output, builtin_catalog());
  fmt::print("generated {} ({} VMs) -> {}\n", draft.name, draft.vms.size(), o.output);
}

struct ShowOptions {
  std::string slice;
  std::string catalog;
  JsonOutput json;
};

struct ImportOptions {
  std::string saved, output, catalog;
};

Registration show_reg(21, [](CLI::App& app) {
  auto* cmd = app.add_subcommand("slice", "Inspect or import one slice");
  cmd->require_subcommand(1);
  auto* show =
      cmd->add_subcommand("show", "Show a slice's VMs, GPUs, NICs, networks and assumptions");
  auto opts = std::make_shared<ShowOptions>();
  show->add_option("slice", opts->slice, "Built-in slice name or path to a slice YAML file")
      ->required();
  show->add_option("--catalog", opts->catalog,
                   "Catalog YAML adding or replacing GPU types, NICs, sites");
  opts->json.add_to(show, "the slice");
  show->callback([opts] { show_slice(opts->slice, opts->json, opts->catalog); });

  auto* imp = cmd->add_subcommand(
      "import", "Turn a slice saved by fablib (GraphML or node-link JSON) into a slice YAML");
  auto io = std::make_shared<ImportOptions>();
  imp->add_option("saved", io->saved, "File written by fablib's slice.save()")->required();
  imp->add_option("-o,--output", io->output, "Slice YAML to write (default: stdout)");
  imp->add_option("--catalog", io->catalog,
                  "Catalog YAML adding or replacing GPU types, NICs, sites");
  imp->callback([io] { import_slice(io->saved, io->output, io->catalog); });

  auto* gen = cmd->add_subcommand(
      "generate",
      "Write a FABRIC-like slice drawn from a seed: N sites of the testbed, one GPU type each, 1-2 "
      "VMs of 1 to that type's most GPUs, FABNetv4 between all, sometimes an L2STS pair");
  auto go = std::make_shared<GenerateOptions>();
  gen->add_option("--sites", go->sites, "Sites to draw")
      ->capture_default_str()
      ->check(CLI::Range(1, int(fabric_testbed().sites.size())));
  gen->add_option("--seed", go->seed, "Seed: the same seed gives the same slice")
      ->capture_default_str();
  gen->add_option("-o,--output", go->output, "Slice YAML to write (default: stdout)");
  gen->callback([go] { generate_slice(*go); });
});

}  // namespace
}  // namespace fabtrain
