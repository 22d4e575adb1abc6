// p2p=scatter in the simulator and the memory model: a stage boundary crossing a slow link
// carries 1/tp of the tensor from each tensor-parallel rank, then an all-gather inside the VM.
#include <doctest/doctest.h>

#include "models/model_spec.hpp"
#include "sim/memory.hpp"
#include "sim/simulator.hpp"
#include "sim_fixtures.hpp"

using namespace fabtrain;
using namespace fabtrain::test;

TEST_CASE("p2p=scatter: a tp=2 pipeline across two sites is faster and holds smaller buffers") {
  build_test_platforms();
  const Catalog catalog = test_catalog();
  const Slice slice = test_slice(catalog, {1, 1}, 2);  // two GPUs per VM, one VM per site
  Simulator sim(slice);
  const ModelSpec& model = tiny_model();
  const Schedule whole = compile(model, parse_plan("tp=2,pp=2,mb=4"), 16, 1024);
  const Schedule split = compile(model, parse_plan("tp=2,pp=2,mb=4,p2p=scatter"), 16, 1024);
  // tp ranks of a stage share a VM (rank order tp first), so the stages meet over the WAN
  const double whole_step = sim.run(model, whole).step_time_s;
  const double split_step = sim.run(model, split).step_time_s;
  CHECK(split_step < whole_step);
  const MemoryEstimate a = estimate_memory(whole, slice);
  const MemoryEstimate b = estimate_memory(split, slice);
  for (int r = 0; r < whole.world; ++r) {
    CAPTURE(r);
    CHECK(b.ranks[r].buffer_bytes < a.ranks[r].buffer_bytes);
    CHECK(b.ranks[r].activation_bytes == doctest::Approx(a.ranks[r].activation_bytes));
  }
}
