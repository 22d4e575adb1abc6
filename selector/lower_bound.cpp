#include "selector/lower_bound.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "sim/simulator.hpp"

namespace fabtrain {

// A lower bound of a schedule's step time, so that plans that cannot win are not simulated.
// Per rank: its own compute, plus for each collective it blocks on the fewest latency terms its
// algorithm can take (tree all-reduce 2 floor(log2 n), ring n - 1) over the group's fastest hop
// (a collective cannot end before its data crossed them), plus the
// pipeline's fill and drain: a rank of stage k cannot start before the first microbatch's
// forward has crossed the stages before it, and the step cannot end before the last
// microbatch's gradient has crossed them back (each stage's fastest rank, each hop's latency).
// No contention, no bandwidth, no other waits: the simulated step is never shorter.
double step_lower_bound(const Schedule& schedule, const Slice& slice, SlicePlatform& platform,
                        const Calibration* calibration) {
  static const Calibration none;
  const Calibration& cal = calibration ? *calibration : none;
  const auto gpus = slice.gpus();
  const Plan& plan = schedule.plan;
  auto latency = [&](int rank_a, int rank_b) {
    return platform.route_latency(device_of(plan, rank_a), device_of(plan, rank_b));
  };
  // The fastest hop between any two members: a ring or a tree cannot take fewer latency terms.
  std::vector<double> hop_latency(schedule.groups.size(), 0);
  for (size_t g = 0; g < schedule.groups.size(); ++g) {
    const auto& members = schedule.groups[g];
    if (members.size() < 2 || members.size() > 64) continue;  // 0 stays a valid bound
    double fastest = 1e300;
    for (size_t i = 0; i < members.size(); ++i)
      for (size_t j = i + 1; j < members.size(); ++j)
        fastest = std::min(fastest, latency(members[i], members[j]));
    hop_latency[g] = fastest;
  }
  const double inf = 1e300;
  std::vector<double> own(schedule.world, 0);
  std::vector<double> first_forward(plan.pp, inf), last_backward(plan.pp, inf), hop(plan.pp, inf);
  for (int r = 0; r < schedule.world; ++r) {
    const GpuType& gpu = *gpus[device_of(plan, r)].type;
    const int stage = rank_coord(plan, r).pp;
    double forward0 = 0, backward_last = 0;
    for (const auto& ins : schedule.ranks[r]) {
      const double t = compute_seconds(ins, gpu, plan.precision, slice.catalog->compute, cal);
      own[r] += t;
      if (const auto* f = std::get_if<Forward>(&ins); f && f->mb == 0) forward0 += t;
      if (const auto* b = std::get_if<Backward>(&ins); b && b->mb == plan.mb - 1)
        backward_last += t;
      if (const auto* c = std::get_if<Collective>(&ins)) {
        const int n = int(schedule.groups[c->group].size());
        const double hops =
            c->op == CollectiveOp::all_reduce ? 2 * std::floor(std::log2(n)) : n - 1;
        own[r] += hops * hop_latency[c->group];
      }
      if (const auto* send = std::get_if<Send>(&ins); send && send->what == Tensor::activation)
        hop[stage] = std::min(hop[stage], latency(r, send->peer));
    }
    first_forward[stage] = std::min(first_forward[stage], forward0);
    last_backward[stage] = std::min(last_backward[stage], backward_last);
  }
  double worst = 0;
  for (int r = 0; r < schedule.world; ++r) {
    const int stage = rank_coord(plan, r).pp;
    double fill_and_drain = 0;
    for (int s = 0; s < stage; ++s)
      fill_and_drain += first_forward[s] + last_backward[s] + 2 * hop[s];
    worst = std::max(worst, own[r] + fill_and_drain);
  }
  return worst;
}

}  // namespace fabtrain
