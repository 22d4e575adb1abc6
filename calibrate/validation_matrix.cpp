// The validation matrix (see validation_matrix.hpp).
#include "calibrate/validation_matrix.hpp"

#include "common/data_dir.hpp"
#include "common/error.hpp"
#include "common/strict_number.hpp"
#include "plan/plan.hpp"
#include "platforms/yaml_fields.hpp"

namespace fabtrain {
namespace {

std::vector<std::string> required_list(const YamlFields& f, const std::string& key) {
  std::vector<std::string> items = f.text_list_or(key);
  if (items.empty()) fail("{}: expected a list of at least one", f.field(key));
  return items;
}

ValidationPass read_pass(const YamlFields& f) {
  f.allow_only({"error", "max_error_pct", "ranking_agrees"});
  const std::string error = f.text("error");
  if (error != "calibrated" && error != "bench_only")
    fail("{}: '{}' is neither calibrated nor bench_only", f.field("error"), error);
  ValidationPass pass{error == "bench_only", f.number("max_error_pct"),
                      f.flag_or("ranking_agrees", true)};
  if (!(pass.max_error_pct > 0)) fail("{}: must be above 0", f.field("max_error_pct"));
  return pass;
}

ValidationRun read_run(const YamlFields& f) {
  f.allow_only({"player", "steps", "seq", "batch", "device_type", "slice", "link_mbit", "nice"});
  ValidationRun run{f.text("player"),       f.integer("steps"),    f.integer("seq"),
                    f.integer("batch"),     f.text("device_type"), f.text("slice"),
                    f.integer("link_mbit"), f.integer("nice")};
  if (run.player != "train" && run.player != "replay")
    fail("{}: '{}' is neither train nor replay", f.field("player"), run.player);
  if (run.steps < 1) fail("{}: {} must be at least 1", f.field("steps"), run.steps);
  if (run.seq < 1) fail("{}: {} must be at least 1", f.field("seq"), run.seq);
  if (run.batch < 1) fail("{}: {} must be at least 1", f.field("batch"), run.batch);
  if (run.link_mbit < 1) fail("{}: {} must be at least 1", f.field("link_mbit"), run.link_mbit);
  if (run.nice < -20 || run.nice > 19)
    fail("{}: {} is not a nice level (-20 to 19)", f.field("nice"), run.nice);
  if (run.slice.find('/') != std::string::npos)
    fail("{}: '{}' must be a file name in platforms/data/slices/", f.field("slice"), run.slice);
  return run;
}

ValidationMode read_mode(const std::string& name, const YamlFields& f) {
  f.allow_only({"models", "plans", "one_way_delays_ms", "full_size", "ratio", "pass", "run"});
  ValidationMode mode;
  mode.name = name;
  mode.models = required_list(f, "models");
  mode.plans = required_list(f, "plans");
  for (const std::string& plan : mode.plans) try {
      (void)parse_plan(plan);
    } catch (const Error& e) {
      fail("{}: {}", f.field("plans"), e.what());
    }
  mode.delays = required_list(f, "one_way_delays_ms");
  for (const std::string& d : mode.delays)
    if (!(strict_finite(d, f.field("one_way_delays_ms")) >= 0))
      fail("{}: {} is negative", f.field("one_way_delays_ms"), d);
  mode.full_size = f.flag_or("full_size", false);
  if (f.has("ratio")) {
    const YamlFields ratio(f.file(), f.where() + ".ratio", f.mapping("ratio"));
    ratio.allow_only({"name", "of", "over"});
    mode.ratio_name = ratio.text("name");
    mode.ratio_of = ratio.text("of");
    mode.ratio_over = ratio.text("over");
  }
  if (f.has("pass"))
    mode.pass = read_pass(YamlFields(f.file(), f.where() + ".pass", f.mapping("pass")));
  mode.run = read_run(YamlFields(f.file(), f.where() + ".run", f.mapping("run")));
  return mode;
}

}  // namespace

std::string builtin_validation_matrix_path() {
  return source_dir() + "/calibrate/data/validation_matrix.yaml";
}

ValidationMode load_validation_mode(const std::string& path, const std::string& mode) {
  const YamlNode root = load_yaml_file(path, "validation matrix");
  if (!root.is_mapping()) fail("{}: expected a mapping with modes:", path);
  const YamlFields top(path, "", root);
  top.allow_only({"modes"});
  std::string known;
  for (const auto& [name, node] : top.mapping("modes").entries()) {
    if (name == mode) {
      if (!node.is_mapping()) fail("{}: modes.{}: expected a mapping", path, name);
      return read_mode(name, YamlFields(path, "modes." + name, node));
    }
    known += (known.empty() ? "" : ", ") + name;
  }
  fail("{}: no mode '{}' (modes: {})", path, mode, known);
}

}  // namespace fabtrain
