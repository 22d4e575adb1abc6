// Reads calibrate/data/published_runs.yaml strictly (unknown keys are errors, every field named in
// the message) and converts what each source measured into seconds per optimizer step.
#include "calibrate/published_runs.hpp"

#include "calibrate/framework_profile.hpp"
#include "common/data_dir.hpp"
#include "common/error.hpp"
#include "models/costs.hpp"
#include "platforms/yaml_fields.hpp"

namespace fabtrain {
namespace {

ModelSpec read_model(const YamlFields& row) {
  const YamlNode node = row.node()["model"];
  if (!node)
    fail("{}: missing (a built-in model name or a mapping of its shape)", row.field("model"));
  if (node.is_scalar()) return load_model(node.text());
  const YamlFields f(row.file(), row.where() + ".model", row.mapping("model"));
  f.allow_only({"name", "n_layer", "n_embd", "n_head", "n_ctx", "vocab_size"});
  ModelSpec m;
  m.name = f.text("name");
  m.n_layer = f.integer("n_layer");
  m.n_embd = f.integer("n_embd");
  m.n_head = f.integer("n_head");
  m.n_ctx = f.integer("n_ctx");
  m.vocab_size = f.integer("vocab_size");
  try {
    validate(m);
  } catch (const Error& e) {
    fail("{}: {}", row.field("model"), e.what());
  }
  return m;
}

PublishedHardware read_hardware(const YamlFields& row, const Catalog& catalog) {
  const YamlFields f(row.file(), row.where() + ".hardware", row.mapping("hardware"));
  f.allow_only({"gpu", "nodes", "gpus_per_node", "intra_node", "network", "nic", "added_delay_ms",
                "shaped_gbit_s"});
  PublishedHardware h;
  h.gpu = f.text("gpu");
  if (!catalog.gpus.count(h.gpu)) {
    std::string known;
    for (const auto& [name, _] : catalog.gpus) known += (known.empty() ? "" : ", ") + name;
    fail("{}: unknown GPU type '{}' (known: {})", f.field("gpu"), h.gpu, known);
  }
  h.nodes = f.integer("nodes");
  h.gpus_per_node = f.integer("gpus_per_node");
  if (h.nodes < 1) fail("{}: {} must be at least 1", f.field("nodes"), h.nodes);
  if (h.gpus_per_node < 1)
    fail("{}: {} must be at least 1", f.field("gpus_per_node"), h.gpus_per_node);
  h.intra_node = f.text("intra_node");
  if (h.intra_node != "nvlink" && h.intra_node != "pcie" && h.intra_node != "pcie-host")
    fail("{}: '{}' is none of nvlink, pcie and pcie-host (peer-to-peer disabled)",
         f.field("intra_node"), h.intra_node);
  if (h.intra_node == "nvlink" && !(catalog.gpu(h.gpu).nvlink_bandwidth > 0))
    fail("{}: {} has no NVLink in the catalog", f.field("intra_node"), h.gpu);
  if (h.nodes > 1) {
    h.network = f.text("network");
    if (h.network != "infiniband" && h.network != "ethernet")
      fail("{}: '{}' is neither infiniband nor ethernet", f.field("network"), h.network);
    h.nic = f.text("nic");
    if (!catalog.nics.count(h.nic)) fail("{}: unknown NIC type '{}'", f.field("nic"), h.nic);
  } else if (f.has("network") || f.has("nic")) {
    fail("{}: a single node has no network between nodes",
         f.field(f.has("network") ? "network" : "nic"));
  }
  for (const char* key : {"added_delay_ms", "shaped_gbit_s"}) {
    if (!f.has(key)) continue;
    if (h.network != "ethernet")
      fail("{}: only an Ethernet network between nodes can be shaped (network is '{}')",
           f.field(key), h.network);
    const double v = f.number(key);
    if (!(v > 0)) fail("{}: {} must be positive", f.field(key), v);
    (std::string(key) == "added_delay_ms" ? h.added_delay_ms : h.shaped_gbit_s) = v;
  }
  return h;
}

// The peak memory and out-of-memory fields of a measurement: a peak needs its kind, and must fit
// the GPU of a run that ran; a run that ran out of memory has no peak or step time.
void read_memory(const YamlFields& f, const PublishedRun& r, const Catalog& catalog,
                 PublishedMeasurement& m) {
  if (f.has("oom")) m.oom = f.flag_or("oom", false);
  if (f.has("memory_kind") && !f.has("peak_memory_gib"))
    fail("{}: a memory kind without peak_memory_gib", f.field("memory_kind"));
  if (f.has("peak_memory_gib")) {
    const double gib = f.number("peak_memory_gib");
    if (!(gib > 0)) fail("{}: {} must be positive", f.field("peak_memory_gib"), gib);
    if (!f.has("memory_kind"))
      fail("{}: say what the peak counts: allocated, reserved or device_used",
           f.field("memory_kind"));
    try {
      m.memory_kind = parse_memory_kind(f.text("memory_kind"));
    } catch (const Error& e) {
      fail("{}: {}", f.field("memory_kind"), e.what());
    }
    m.peak_memory_bytes = gib * double(1 << 30);
    const double capacity = catalog.gpu(r.hardware.gpu).memory_bytes;
    if (*m.peak_memory_bytes > capacity)
      fail("{}: {} GiB is above the {} GiB of a {} for a run that ran", f.field("peak_memory_gib"),
           gib, capacity / double(1 << 30), r.hardware.gpu);
  }
  if (m.oom.value_or(false) && (m.peak_memory_bytes || m.timed()))
    fail("{}: a run that ran out of memory has no peak memory or step time", f.field("oom"));
}

// Seconds per step from what the source published: a step time, a throughput in tokens/s, or
// TFLOP/s per GPU by the formula the source used; and the peak memory or out-of-memory verdict.
PublishedMeasurement read_measurement(const YamlFields& row, const PublishedRun& r,
                                      const Catalog& catalog) {
  const YamlFields f(row.file(), row.where() + ".measured", row.mapping("measured"));
  f.allow_only({"step_time_s", "tokens_per_s", "tflops_per_gpu", "flops_formula", "as_published",
                "peak_memory_gib", "memory_kind", "oom"});
  const int given =
      int(f.has("step_time_s")) + int(f.has("tokens_per_s")) + int(f.has("tflops_per_gpu"));
  const bool memory_only = f.has("peak_memory_gib") || f.has("oom");
  if (given > 1 || (given == 0 && !memory_only))
    fail(
        "{}: give one of step_time_s, tokens_per_s, tflops_per_gpu (found {}), or a memory "
        "row's peak_memory_gib or oom",
        f.field("step_time_s"), given);
  PublishedMeasurement m;
  m.as_published = f.text("as_published");
  auto positive = [&](const char* key) {
    const double v = f.number(key);
    if (!(v > 0)) fail("{}: {} must be positive", f.field(key), v);
    return v;
  };
  if (f.has("step_time_s")) {
    m.step_time_s = positive("step_time_s");
  } else if (f.has("tokens_per_s")) {
    m.step_time_s = double(r.global_batch) * r.seq / positive("tokens_per_s");
  } else if (f.has("tflops_per_gpu")) {
    const double tflops = positive("tflops_per_gpu");
    const std::string formula = f.text("flops_formula");
    double flops = 0;
    if (formula == "megatron")
      flops = megatron_step_flops(r.model, r.global_batch, r.seq, r.plan.recompute);
    else if (formula == "alpa")
      flops = alpa_step_flops(r.model, r.global_batch, r.seq, r.plan.recompute);
    else
      fail("{}: '{}' is not a known formula (megatron, alpa)", f.field("flops_formula"), formula);
    m.step_time_s = flops / (tflops * 1e12 * r.hardware.gpus());
  }
  read_memory(f, r, catalog, m);
  return m;
}

PublishedRun read_run(const YamlFields& f, int row, const Catalog& catalog,
                      const std::map<std::string, FrameworkProfile>& profiles) {
  f.allow_only({"id", "source", "url", "model", "seq", "global_batch", "plan", "framework",
                "framework_profile", "framework_memory", "hardware", "communicator", "measured",
                "unstated", "large_error_reason", "compare"});
  PublishedRun r;
  r.row = row;
  r.id = f.text("id");
  r.source = f.text("source");
  r.url = f.text("url");
  r.model = read_model(f);
  r.seq = f.integer("seq");
  if (r.seq < 1 || r.seq > r.model.n_ctx)
    fail("{}: {} must be between 1 and the model's context {}", f.field("seq"), r.seq,
         r.model.n_ctx);
  r.global_batch = f.integer("global_batch");
  try {
    r.plan = parse_plan(f.text("plan"));
  } catch (const Error& e) {
    fail("{}: {}", f.field("plan"), e.what());
  }
  r.framework = f.text("framework");
  if (f.has("framework_profile")) {
    const std::string name = f.text("framework_profile");
    const auto found = profiles.find(name);
    if (found == profiles.end()) {
      std::string known;
      for (const auto& [n, _] : profiles) known += (known.empty() ? "" : ", ") + n;
      fail("{}: unknown framework profile '{}' (known: {})", f.field("framework_profile"), name,
           known.empty() ? "none in framework_profiles" : known);
    }
    r.framework_profile = found->second;
  }
  r.hardware = read_hardware(f, catalog);
  if (r.plan.ranks() != r.hardware.gpus())
    fail("{}: {} needs {} GPUs, the hardware has {} ({} x {})", f.field("plan"), to_string(r.plan),
         r.plan.ranks(), r.hardware.gpus(), r.hardware.nodes, r.hardware.gpus_per_node);
  try {
    validate(r.plan, r.model, r.global_batch);
  } catch (const Error& e) {
    fail("{}: {}", f.field("plan"), e.what());
  }
  r.communicator = f.text("communicator");
  if (!catalog.communicators.count(r.communicator))
    fail("{}: unknown communicator profile '{}'", f.field("communicator"), r.communicator);
  r.framework_memory = f.text_or("framework_memory", "");
  if (!r.framework_memory.empty() && !catalog.framework_memory.count(r.framework_memory))
    fail("{}: unknown framework memory profile '{}'", f.field("framework_memory"),
         r.framework_memory);
  r.measured = read_measurement(f, r, catalog);
  r.unstated = f.text_list_or("unstated");
  r.large_error_reason = f.text_or("large_error_reason", "");
  r.compare = f.text_or("compare", "");
  if (!r.compare.empty() && !r.measured.timed())
    fail("{}: plans are compared by their step times; this row has none", f.field("compare"));
  return r;
}

}  // namespace

MemoryKind parse_memory_kind(const std::string& text) {
  for (MemoryKind k : {MemoryKind::allocated, MemoryKind::reserved, MemoryKind::device_used})
    if (text == to_string(k)) return k;
  fail("'{}' is not a memory kind (allocated, reserved, device_used)", text);
}

const char* to_string(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::allocated:
      return "allocated";
    case MemoryKind::reserved:
      return "reserved";
    case MemoryKind::device_used:
      return "device_used";
  }
  return "?";
}

PublishedFile load_published_runs(const std::string& path, const Catalog& catalog) {
  const YamlNode root = load_yaml_file(path, "published runs");
  const YamlFields top(path, "", root);
  top.allow_only({"framework_profiles", "runs"});
  const YamlNode runs = top.sequence_or_empty("runs");
  if (runs.size() == 0) fail("{}: no runs (expected a list under runs:)", top.field("runs"));
  PublishedFile file;
  if (top.has("framework_profiles")) {
    const YamlNode profiles = top.mapping("framework_profiles");
    for (const auto& entry : profiles.entries()) {
      const std::string name = entry.first;
      const std::string where = "framework_profiles." + name;
      if (!entry.second.is_mapping()) fail("{}: {}: expected a mapping", path, where);
      file.framework_profiles[name] =
          read_framework_profile(name, YamlFields(path, where, entry.second));
    }
  }
  file.rows = int(runs.size());
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const std::string where = fmt::format("runs[{}]", i);
    const std::string id = runs[i].is_mapping() && runs[i]["id"] && runs[i]["id"].is_scalar()
                               ? runs[i]["id"].text()
                               : "?";
    try {
      file.runs.push_back(
          read_run(YamlFields(path, where, runs[i]), int(i), catalog, file.framework_profiles));
    } catch (const Error& e) {
      file.problems.push_back(fmt::format("row {} ({}): {}", i, id, e.what()));
    }
  }
  return file;
}

std::string builtin_published_runs_path() {
  return source_dir() + "/calibrate/data/published_runs.yaml";
}

}  // namespace fabtrain
