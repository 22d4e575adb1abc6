// fabtrain advise --availability FILE: from what FABRIC has free (fablib's site list) to the slice
// to reserve: the search's best plan on every free GPU under the user's caps, the next-best with
// fewer GPUs or fewer sites, and two files: the slice (slice.yaml) and a fablib script that
// reserves it (reserve.py).
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "command.hpp"
#include "common/atomic_file.hpp"
#include "common/error.hpp"
#include "common/human_units.hpp"
#include "common/text_table.hpp"
#include "json_output.hpp"
#include "say.hpp"
#include "search_cli.hpp"
#include "selector/advice.hpp"

namespace fabtrain {
namespace {

struct Options {
  SearchCli search;
  std::string availability;
  AdviceOptions advice;
  std::string out_dir = ".";
  std::string json;
};

int sites_of(const Slice& slice, const std::vector<int>& gpus) {
  const auto all = slice.gpus();
  std::set<std::string> sites;
  for (int g : gpus) sites.insert(slice.vms[all[g].vm].site);
  return int(sites.size());
}

std::string summary(const Slice& slice, const Evaluated& e) {
  return fmt::format(
      "{} ({}) on {}: {} to train, {} GPU-hours, {:.0f} tokens/s",
      to_short_string(e.candidate.plan), technique_name(e.candidate.plan),
      describe_gpus(slice, e.candidate.subset.gpus), format_train_time(e.time_to_train_s),
      format_gpu_hours(e.time_to_train_s * e.candidate.plan.ranks() / 3600), e.tokens_per_s);
}

// The best plans using fewer GPUs, and fewer sites, than the chosen one: each its own search with
// a quarter of the budget (none when nothing smaller fits).
std::vector<std::pair<std::string, std::optional<Evaluated>>> alternatives(
    const ModelSpec& model, const Slice& slice, const SearchOptions& options,
    const Evaluated& best) {
  std::vector<std::pair<std::string, std::optional<Evaluated>>> out;
  SearchOptions one = options;
  one.keep_top = 1;
  one.compile_budget /= 4, one.simulate_budget /= 4;
  // ok: whether a subset's GPU and site counts are below the best's (its plans run on all of it).
  const auto smaller = [&](const std::string& label, const std::function<bool(int, int)>& ok) {
    SearchOptions o = one;
    o.only_subsets = [&](const GpuSubset& s) {
      return options.only_subsets(s) && ok(int(s.gpus.size()), int(s.sites.size()));
    };
    const SearchResult r = search_showing_progress(model, slice, o, "plans with " + label);
    out.push_back({label, r.ranked.empty() ? std::nullopt : std::optional(r.ranked.front())});
  };
  const int gpus = best.candidate.plan.ranks(), sites = sites_of(slice, best.candidate.subset.gpus);
  if (gpus > 1) smaller("fewer GPUs", [&](int g, int) { return g < gpus; });
  if (sites > 1) smaller("fewer sites", [&](int, int s) { return s < sites; });
  return out;
}

void run(Options& o) {
  if (o.advice.max_gpus < 0 || o.advice.max_sites < 0)
    fail("--max-gpus and --max-sites must be at least 1 (0: no cap is the default)");
  const Testbed& testbed = fabric_testbed();
  const Availability free = read_availability(o.availability, testbed);
  std::FILE* info = o.json == "-" ? stderr : stdout;
  const int width = table_width(false);
  say(width, info, "fabtrain advise: {} in {}\n", counted(free.sites.size(), "usable site"),
      free.path);
  for (const auto& l : free.left_out) say(width, info, "  left out: {}\n", l);
  for (const auto& u : free.unknown) say(width, info, "  unknown: {}\n", u);
  std::filesystem::create_directories(o.out_dir);
  const std::string all_path =
      (std::filesystem::temp_directory_path() / fmt::format("fabtrain-free-{}.yaml", ::getpid()))
          .string();
  const Slice all =
      write_slice(testbed_slice(free, testbed, o.advice), all_path, builtin_catalog());
  say(width, info, "  every free GPU: {} in {} at {}\n", counted(all.gpu_count(), "GPU"),
      counted(all.vms.size(), "VM"), counted(all.site_names().size(), "site"));
  const std::string amount = o.search.assumed_amount();
  if (!amount.empty()) say(width, info, "  {}\n", amount);
  o.search.slice = all_path;
  auto [model, slice, options] = o.search.resolve();
  std::filesystem::remove(all_path);
  options.keep_top = 10;
  options.only_subsets = [&](const GpuSubset& s) { return within_caps(s, o.advice); };
  SimMemo memo;
  options.memo = &memo;
  const SearchResult r = search_showing_progress(model, slice, options);
  if (r.ranked.empty())
    fail("no plan of {} fits on the free GPUs of {} within the caps", model.name, free.path);
  const Evaluated& best = r.ranked.front();
  const double gap = r.gap(options.objective);
  say(width, info, "\nbest: {}\n", summary(slice, best));
  say(width, info, "  {} (searched {} in {:.1f} s)\n",
      gap == 0 ? "exact" : fmt::format("not exact: at most {:.1f}% better possible", 100 * gap),
      counted(r.enumerated, "plan"), r.seconds);
  const SliceDraft reserve = slice_to_reserve(slice, best, o.advice, "fabtrain-advised");
  say(width, info, "reserve:\n");
  for (const auto& vm : reserve.vms)
    say(width, info, "  {} at {}: {} x {}, {}\n", vm.name, vm.site, vm.gpus, vm.gpu, vm.nic);
  say(width, info, "  network: {}\n",
      reserve.networks.empty() ? "none (one VM)" : reserve.networks.front().kind);
  nlohmann::json j = {{"availability", free.path},
                      {"left_out", free.left_out},
                      {"unknown", free.unknown},
                      {"best",
                       {{"plan", to_string(best.candidate.plan)},
                        {"technique", technique_name(best.candidate.plan)},
                        {"gpus", best.candidate.plan.ranks()},
                        {"where", describe_gpus(slice, best.candidate.subset.gpus)},
                        {"time_to_train_s", best.time_to_train_s},
                        {"tokens_per_s", best.tokens_per_s}}},
                      {"gap", gap},
                      {"alternatives", nlohmann::json::array()}};
  for (const auto& [label, e] : alternatives(model, slice, options, best)) {
    if (!e) {
      say(width, info, "with {}: no plan fits\n", label);
      continue;
    }
    say(width, info, "with {}: {}\n", label, summary(slice, *e));
    j["alternatives"].push_back({{"kind", label},
                                 {"plan", to_string(e->candidate.plan)},
                                 {"where", describe_gpus(slice, e->candidate.subset.gpus)},
                                 {"time_to_train_s", e->time_to_train_s}});
  }
  const auto dir = std::filesystem::path(o.out_dir);
  write_slice(reserve, (dir / "slice.yaml").string(), builtin_catalog());
  write_text_atomically((dir / "reserve.py").string(), reserve_script(reserve, testbed),
                        "the reserve script");
  say(width, info, "wrote {} and {}\n", (dir / "slice.yaml").string(),
      (dir / "reserve.py").string());
  JsonOutput{o.json}.write(j);
}

Registration reg(52, [](CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "advise",
      "From what FABRIC has free (fablib's list_sites JSON, or a YAML of site -> free GPUs) to "
      "the slice to reserve: the best plan on the free GPUs within the caps, and slice.yaml and "
      "reserve.py (fablib) in -o DIR");
  cmd->add_option("--availability", o->availability,
                  "fablib.list_sites(output='json') or `fabric-cli resources sites --json` output")
      ->required();
  o->search.add_to(cmd, false);
  cmd->add_option("--max-gpus", o->advice.max_gpus, "Use at most this many GPUs (default: no cap)");
  cmd->add_option("--max-sites", o->advice.max_sites,
                  "Use at most this many sites (default: no cap)");
  cmd->add_option("--avoid", o->advice.avoid, "Sites not to use (comma-separated)");
  cmd->add_option("--include", o->advice.include, "Sites the slice must use (comma-separated)");
  cmd->add_option("--gpus-per-vm", o->advice.gpus_per_vm,
                  "Most GPUs in one VM (default: what one FABRIC host holds per type: 3 RTX 6000 "
                  "or A30, 2 A40 or T4; platforms/data/fabric_testbed.yaml)");
  cmd->add_option("--network", o->advice.network, "fabnetv4 (any sites) or l2sts (two sites)")
      ->capture_default_str();
  cmd->add_option("-o,--output-dir", o->out_dir, "Where slice.yaml and reserve.py go")
      ->capture_default_str();
  cmd->add_option("--json", o->json, "Write the advice as JSON to FILE, or - for stdout");
  cmd->callback([o] { run(*o); });
});

}  // namespace
}  // namespace fabtrain
