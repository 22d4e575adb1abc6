// VMs that fablib placed on one physical host (instance_parent, a slice's `host`) with NIC_Basic
// share that host's NIC port in the simulation: data parallelism over them is slower than over
// VMs on separate hosts, and nothing changes for VMs with dedicated NICs.
#include <doctest/doctest.h>

#include "selector/search.hpp"
#include "tests/test_support.hpp"

using namespace fabtrain;

namespace {

std::string lab(const std::string& nic, const std::string& host_b) {
  return fmt::format(R"(vms:
  - {{name: a, site: UTAH, gpu: GPU_RTX6000, gpus: 1, nic: {0}, host: w1}}
  - {{name: b, site: UTAH, gpu: GPU_RTX6000, gpus: 1, nic: {0}, host: {1}}}
  - {{name: c, site: UTAH, gpu: GPU_RTX6000, gpus: 1, nic: {0}, host: w3}}
networks:
  - {{name: lan, kind: l2bridge, vms: [a, b, c]}}
)",
                     nic, host_b);
}

double step_of(const std::string& path, const ModelSpec& model) {
  const Slice slice = load_slice(path);
  Candidate c;
  c.plan = parse_plan("dp=3");
  c.plan.devices = {0, 1, 2};
  c.global_batch = 6;
  c.subset.gpus = {0, 1, 2};
  SearchOptions o;
  o.space.seq = 128;
  const SearchResult r = evaluate(model, slice, {c}, o);
  REQUIRE(r.ranked.size() == 1);
  return r.ranked[0].step_time_s;
}

}  // namespace

TEST_CASE("VMs on one host share its NIC_Basic port; dedicated NICs are not shared") {
  test::TempDir dir("fabtrain-shared-host");
  const ModelSpec model = load_model("gpt2");
  const double apart = step_of(dir.write("apart.yaml", lab("NIC_Basic", "w2")), model);
  const double together = step_of(dir.write("together.yaml", lab("NIC_Basic", "w1")), model);
  CHECK(together > apart * 1.05);
  const double dedicated_apart =
      step_of(dir.write("d-apart.yaml", lab("NIC_ConnectX_6", "w2")), model);
  const double dedicated_together =
      step_of(dir.write("d-together.yaml", lab("NIC_ConnectX_6", "w1")), model);
  CHECK(dedicated_together == doctest::Approx(dedicated_apart).epsilon(1e-9));
}
