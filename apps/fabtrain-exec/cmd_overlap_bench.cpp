// fabtrain-exec overlap-bench: how much of a large all-reduce each MPI progress mode hides
// behind compute (exec/measure/overlap_bench.hpp), two or more ranks under mpirun; rank 0 prints
// the table. docs/results/2026-12-01-overlap.md gives the command and the numbers behind the
// default mode.
#include <fmt/format.h>

#include <memory>

#include "command.hpp"
#include "exec/measure/overlap_bench.hpp"

namespace fabtrain {
namespace {

Registration reg(21, [](CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "overlap-bench", "How much of an all-reduce each MPI progress mode hides behind compute");
  auto c = std::make_shared<OverlapBenchConfig>();
  cmd->add_option("--mib", c->mib, "All-reduce size, MiB")->capture_default_str();
  cmd->add_option("--blocks", c->blocks, "Blocks of compute behind it (progress() between)")
      ->capture_default_str();
  cmd->add_option("--block-ms", c->block_ms, "Compute per block, ms (sized once, then fixed)")
      ->capture_default_str();
  cmd->add_option("--repeats", c->repeats, "Repeats (medians are reported)")->capture_default_str();
  cmd->add_option("--modes", c->modes, "Progress modes to compare: none, test, thread")
      ->delimiter(',')
      ->check(CLI::IsMember({"thread", "test", "none"}))
      ->capture_default_str();
  cmd->add_option("--poll-us", c->poll_us, "The progress thread's pauses to compare, microseconds")
      ->delimiter(',')
      ->capture_default_str();
  cmd->callback([c] {
    MpiCommunicator comm(nullptr, nullptr);
    try {
      const OverlapBenchResult r = run_overlap_bench(*c, comm);
      if (comm.rank() == 0) fmt::print("{}", overlap_bench_table(*c, r));
    } catch (const std::exception& e) {
      if (comm.size() > 1) comm.abort(e.what());
      throw;
    }
  });
});

}  // namespace
}  // namespace fabtrain
