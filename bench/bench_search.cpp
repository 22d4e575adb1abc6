// Selector speed at the scale of the testbed: the search a `fabtrain plan` runs (its top 10 kept
// exact, then the "why" rivals), for GPT-2 medium and large on FABRIC-like slices drawn by the
// slice generator (platforms/slice_generator.hpp): N = 4, 8, 16 and 30 sites (all of FABRIC),
// seeds 1-5, plus bench/slices/fabric-8site.yaml and the README's default (GPT-2 medium on
// utah-amst, with break-even). Each case runs in a process of its own, so its peak memory is its
// own. Per N: the median and the worst wall time, the peak memory, the largest gap printed (how
// much better a plan not simulated could be), and the ratio of the target to the worst time
// (targets: under 3 s up to 8 sites, under 10 s up to 30; at most 1 GiB). Wall time: the search
// uses both cores. `bench_search quick` runs seed 1 only.
#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <vector>

#include "common/data_dir.hpp"
#include "platforms/slice_generator.hpp"
#include "selector/break_even.hpp"
#include "selector/search.hpp"
#include "selector/why_it_wins.hpp"

using namespace fabtrain;

namespace {

struct Case {
  double seconds = 0, gap = 0;
  double peak_mib = 0;
  bool ok = false;
};

// What `fabtrain plan` computes: the top 10, the rivals, and break-even where it would.
double plan_like(const std::string& model_name, const Slice& slice) {
  const ModelSpec model = load_model(model_name);
  SearchOptions o;
  o.keep_top = 10;
  SimMemo memo;
  PlanMemo compiled;
  o.memo = &memo, o.compiled = &compiled;
  o.train_tokens = 3.04e7;
  o.best_of_each_family = true;
  const SearchResult r = search(model, slice, o);
  if (r.ranked.empty()) return -1;
  explain_winner(r, o);
  const auto sites = slice.site_names().size();
  if (sites * (sites - 1) / 2 <= 3) break_evens(model, slice, o);
  return r.gap(o.objective);
}

// Runs the case in a child process: its wall time, gap and peak resident memory.
Case run_case(const std::string& model, const std::string& slice_path) {
  int fds[2];
  if (::pipe(fds) != 0) return {};
  std::fflush(stdout);  // else the child prints the parent's buffered lines again
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    double gap = -1;
    try {
      gap = plan_like(model, load_slice(slice_path));
    } catch (const std::exception& e) {
      fmt::print(stderr, "{} on {}: {}\n", model, slice_path, e.what());
    }
    if (::write(fds[1], &gap, sizeof gap) != sizeof gap) _exit(2);
    _exit(0);
  }
  ::close(fds[1]);
  Case c;
  double gap = -1;
  const bool got = ::read(fds[0], &gap, sizeof gap) == sizeof gap;
  ::close(fds[0]);
  int status = 0;
  rusage usage{};
  ::wait4(pid, &status, 0, &usage);
  c.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  c.peak_mib = usage.ru_maxrss / 1024.0;
  c.ok = got && gap >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  c.gap = gap;
  return c;
}

void report(const std::string& label, std::vector<Case> cases, double target_s) {
  std::vector<double> seconds;
  double worst_gap = 0, peak = 0;
  int failed = 0;
  for (const auto& c : cases) {
    seconds.push_back(c.seconds);
    worst_gap = std::max(worst_gap, c.gap);
    peak = std::max(peak, c.peak_mib);
    failed += !c.ok;
  }
  std::sort(seconds.begin(), seconds.end());
  const double median = seconds[seconds.size() / 2], worst = seconds.back();
  fmt::print(
      "{:<34} {:>3} runs  median {:>6.2f} s  worst {:>6.2f} s  target < {:>4.1f} s  ratio {:>5.2f}"
      "  peak {:>6.0f} MiB (< 1024: {:.2f})  largest gap {:>5.1f}%{}\n",
      label, cases.size(), median, worst, target_s, target_s / worst, peak, 1024 / peak,
      100 * worst_gap, failed ? fmt::format("  {} FAILED", failed) : "");
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "quick") == 0;
  const auto dir = std::filesystem::temp_directory_path() / "fabtrain-bench-slices";
  std::filesystem::create_directories(dir);
  report("plan gpt2-medium utah-amst (README)", {run_case("gpt2-medium", "utah-amst")}, 1.0);
  report("plan gpt2-large utah-mass", {run_case("gpt2-large", "utah-mass")}, 2.0);
  report("plan gpt2-large fabric-8site",
         {run_case("gpt2-large", source_dir() + "/bench/slices/fabric-8site.yaml")}, 3.0);
  for (int sites : {4, 8, 16, 30})
    for (const char* model : {"gpt2-medium", "gpt2-large"}) {
      std::vector<Case> cases;
      for (int seed = 1; seed <= (quick ? 1 : 5); ++seed) {
        const auto path = dir / fmt::format("fabric-{}site-seed{}.yaml", sites, seed);
        write_slice(generate_fabric_slice(sites, seed, fabric_testbed()), path.string(),
                    builtin_catalog());
        cases.push_back(run_case(model, path.string()));
      }
      report(fmt::format("plan {} {} sites", model, sites), cases, sites <= 8 ? 3.0 : 10.0);
    }
}
