#include "sim/lower_bound.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <type_traits>
#include <variant>
#include <vector>

#include "common/error.hpp"
#include "plan/buckets.hpp"
#include "sim/cost/compute_cost.hpp"
#include "sim/group_collective.hpp"
#include "sim/simulator.hpp"

namespace fabtrain {

// A lower bound of a schedule's step time, so that plans that cannot win are not simulated.
// Per rank: its own compute, plus for each collective it blocks on the fewest latency terms its
// algorithm can take (tree all-reduce 2 floor(log2 n), ring n - 1) over the group's fastest hop
// (a collective cannot end before its data crossed them) and the time of the least volume one of
// its flows carries (all-reduce: the buffer, as a tree edge does and a ring's 2(n-1)/n share
// exceeds; the others: a ring's (n-1)/n, which a binomial reduce's edges exceed too) over the
// fastest route that leaves a VM, since a group over several VMs has a flow that does; over
// several sites, every site's members must exchange that volume with the others, so the slowest
// site's fastest route out of it (sim/group_collective.hpp's ring and tree shapes; with a
// calibration's collective correction that term is left out), plus the
// pipeline's fill and drain: a rank of stage k cannot start before the first microbatch's
// forward has crossed the stages before it, and the step cannot end before the last
// microbatch's gradient has crossed them back (each stage's fastest rank, each hop's latency).
// A started collective (overlap=on) may hide behind compute, so it is not added to the rank's
// time: the rank's calls of one group run one after another (sim/simulator.hpp), so their sum,
// from the step's start, bounds the step on its own. Where the communicator progresses them
// together (concurrent_collectives) a call may start before the previous one's latency is paid,
// so only the longest one counts. A reduce-scatter via the group's root
// (started_reduce_scatter_via_root) takes ceil(log2 n) reduce rounds and a scatter, not n - 1
// steps. The bound is the larger of the two (the compute and blocking communication path, the
// started communication path), never their sum. No contention, no bandwidth, no other waits: the
// simulated step is never shorter.
namespace {

void add_call(std::vector<BoundInputs::Call>& calls, const BoundInputs::Call& call) {
  for (auto& c : calls)
    if (c.group == call.group && c.op == call.op && c.bytes == call.bytes &&
        c.started == call.started && c.via_root == call.via_root &&
        c.calibrated == call.calibrated) {
      ++c.count;
      return;
    }
  calls.push_back(call);
}

// What a compute instruction's time depends on, but for its microbatch: its kind (the variant's
// index), its blocks (an optimizer step: its kernels), FLOPs and bytes (a rank's microbatches are
// alike; products follow the blocks). Instructions that compute nothing share one key.
using WorkKey = std::tuple<std::size_t, int, int, double, double>;
WorkKey work_key(const Instruction& ins) {
  return std::visit(
      [&](const auto& i) -> WorkKey {
        using T = std::decay_t<decltype(i)>;
        if constexpr (std::is_same_v<T, Forward> || std::is_same_v<T, Backward>)
          return {ins.index(), i.begin, i.end, i.flops, i.bytes};
        else if constexpr (std::is_same_v<T, OptimizerStep>)
          return {ins.index(), i.kernels, 0, 0.0, i.bytes};
        else
          return {std::variant_npos, 0, 0, 0.0, 0.0};
      },
      ins);
}

}  // namespace

BoundInputs bound_inputs(const Schedule& schedule, const Slice& slice,
                         const Calibration* calibration) {
  static const Calibration none;
  const Calibration& cal = calibration ? *calibration : none;
  const auto gpus = slice.gpus();
  const Plan& plan = schedule.plan;
  BoundInputs in;
  in.plan = plan;
  in.groups = schedule.groups;
  in.ranks.resize(std::size_t(schedule.world));
  for (int r = 0; r < schedule.world; ++r) {
    const GpuType& gpu = *gpus[device_of(plan, r)].type;
    BoundInputs::Rank& rank = in.ranks[std::size_t(r)];
    std::map<WorkKey, double> seconds_of;  // the microbatches of a rank repeat the same work
    for (const auto& ins : schedule.ranks[r]) {
      const auto key = work_key(ins);
      auto known = seconds_of.find(key);
      if (known == seconds_of.end())
        known = seconds_of
                    .emplace(key,
                             compute_seconds(ins, gpu, plan.precision, slice.catalog->compute, cal))
                    .first;
      const double t = known->second;
      rank.compute += t;
      if (const auto* f = std::get_if<Forward>(&ins); f && f->mb == 0) rank.forward0 += t;
      if (const auto* b = std::get_if<Backward>(&ins); b && b->mb == plan.mb - 1)
        rank.backward_last += t;
      if (const auto* c = std::get_if<Collective>(&ins))
        add_call(rank.calls,
                 {c->group, c->op, c->bytes, c->request >= 0,
                  played_via_root(*c, slice.communicator), cal.collectives.count(c->op) > 0});
      const auto* send = std::get_if<Send>(&ins);
      auto& peers = rank.activation_peers;
      if (send && send->what == Tensor::activation &&
          std::find(peers.begin(), peers.end(), send->peer) == peers.end())
        peers.push_back(send->peer);
    }
  }
  return in;
}

namespace {

// Per group: the fastest hop between any two members (a ring or a tree cannot take fewer latency
// terms), and per site of the group its members' routes to the other sites' members (a group over
// several sites), else the routes across VMs (one site, several VMs), else all: the pairs a flow
// of the call must use.
struct GroupRoutes {
  std::vector<double> hop_latency;
  std::vector<std::vector<std::vector<std::pair<int, int>>>> cuts;
};

GroupRoutes group_routes(const BoundInputs& in, const Slice& slice, SlicePlatform& platform) {
  const auto gpus = slice.gpus();
  const Plan& plan = in.plan;
  auto site_of = [&](int rank) { return slice.vms[gpus[device_of(plan, rank)].vm].site; };
  auto vm_of = [&](int rank) { return gpus[device_of(plan, rank)].vm; };
  GroupRoutes routes;
  routes.hop_latency.assign(in.groups.size(), 0);
  routes.cuts.resize(in.groups.size());
  for (size_t g = 0; g < in.groups.size(); ++g) {
    const auto& members = in.groups[g];
    if (members.size() < 2 || members.size() > 64) continue;  // 0 stays a valid bound
    double fastest = 1e300;
    bool spans_vms = false, spans_sites = false;
    for (size_t i = 0; i < members.size(); ++i)
      for (size_t j = i + 1; j < members.size(); ++j) {
        fastest = std::min(fastest, platform.route_latency(device_of(plan, members[i]),
                                                           device_of(plan, members[j])));
        spans_vms = spans_vms || vm_of(members[i]) != vm_of(members[j]);
        spans_sites = spans_sites || site_of(members[i]) != site_of(members[j]);
      }
    routes.hop_latency[g] = fastest;
    std::map<std::string, std::vector<std::pair<int, int>>> by_site;
    for (int a : members)
      for (int b : members) {
        const bool keep = spans_sites ? site_of(a) != site_of(b)
                          : spans_vms ? vm_of(a) != vm_of(b)
                                      : a != b;
        if (keep)
          by_site[spans_sites ? site_of(a) : ""].emplace_back(device_of(plan, a),
                                                              device_of(plan, b));
      }
    for (auto& [site, pairs] : by_site) routes.cuts[g].push_back(std::move(pairs));
  }
  return routes;
}

}  // namespace

double step_lower_bound(const BoundInputs& in, const Slice& slice, SlicePlatform& platform) {
  const Plan& plan = in.plan;
  const GroupRoutes routes = group_routes(in, slice, platform);
  std::map<std::pair<int, double>, double> transfer;  // (group, bytes) -> least flow time
  auto least_transfer = [&](const BoundInputs::Call& c) {
    if (c.calibrated) return 0.0;
    const int n = int(in.groups[c.group].size());
    const double bytes = c.op == CollectiveOp::all_reduce ? c.bytes : c.bytes * (n - 1) / n;
    const auto key = std::make_pair(c.group, bytes);
    const auto it = transfer.find(key);
    if (it != transfer.end()) return it->second;
    double slowest_cut = 0;  // every cut must carry the volume: the slowest one's fastest route
    for (const auto& pairs : routes.cuts[c.group]) {
      double least = 1e300;
      for (const auto& [a, b] : pairs)
        least = std::min(least, platform.transfer_seconds(a, b, bytes));
      slowest_cut = std::max(slowest_cut, least);
    }
    return transfer.emplace(key, slowest_cut).first->second;
  };
  const double inf = 1e300;
  const int world = int(in.ranks.size());
  std::vector<double> own(world, 0), started(world, 0);
  std::vector<double> first_forward(plan.pp, inf), last_backward(plan.pp, inf), hop(plan.pp, inf);
  for (int r = 0; r < world; ++r) {
    const BoundInputs::Rank& rank = in.ranks[std::size_t(r)];
    const int stage = rank_coord(plan, r).pp;
    own[r] = rank.compute;
    std::map<int, double> started_per_group;
    for (const auto& c : rank.calls) {
      const int n = int(in.groups[c.group].size());
      const double hops = c.op == CollectiveOp::all_reduce ? 2 * std::floor(std::log2(n))
                          : c.via_root                     ? std::ceil(std::log2(n)) + 1
                                                           : n - 1;
      const double least = hops * routes.hop_latency[c.group] + least_transfer(c);
      if (!c.started)
        own[r] += c.count * least;
      else if (slice.communicator.concurrent_collectives)
        started_per_group[c.group] = std::max(started_per_group[c.group], least);
      else
        started_per_group[c.group] += c.count * least;
    }
    for (int peer : rank.activation_peers)
      hop[stage] =
          std::min(hop[stage], platform.route_latency(device_of(plan, r), device_of(plan, peer)));
    for (const auto& [group, seconds] : started_per_group)
      started[r] = std::max(started[r], seconds);
    first_forward[stage] = std::min(first_forward[stage], rank.forward0);
    last_backward[stage] = std::min(last_backward[stage], rank.backward_last);
  }
  double worst = 0;
  for (int r = 0; r < world; ++r) {
    const int stage = rank_coord(plan, r).pp;
    double fill_and_drain = 0;
    for (int s = 0; s < stage; ++s)
      fill_and_drain += first_forward[s] + last_backward[s] + 2 * hop[s];
    worst = std::max({worst, own[r] + fill_and_drain, started[r]});
  }
  return worst;
}

double step_lower_bound(const Schedule& schedule, const Slice& slice, SlicePlatform& platform,
                        const Calibration* calibration) {
  return step_lower_bound(bound_inputs(schedule, slice, calibration), slice, platform);
}

PlanFloor::PlanFloor(const ModelSpec& model, const Slice& slice, SlicePlatform& platform, int seq,
                     Precision precision, const Calibration* calibration)
    : model_(model), slice_(slice), platform_(platform), seq_(seq), precision_(precision) {
  static const Calibration none;
  const Calibration& cal = calibration ? *calibration : none;
  calibrated_collectives_ = !cal.collectives.empty();
  // The framework's memory that every plan pays whatever it allocates: the context and the
  // cuBLAS workspace (the allocator's slack and the communicator's buffers only add to it).
  const FrameworkMemory& framework = slice.catalog->framework_memory_profile();
  for (const auto& g : slice.gpus()) {
    vm_.push_back(g.vm);
    framework_bytes_.push_back(framework.context_for(g.type->name) +
                               framework.cublas_workspace_bytes);
    double peak = 0;
    try {
      peak = peak_flops(*g.type, precision);
    } catch (const Error&) {
      // No peak in this precision: its plans fail to simulate, and say why there.
    }
    // The matmul efficiency compute_seconds() takes, a calibration's over the catalog's.
    const ComputeParameters base{matmul_efficiency_at(slice.catalog->compute, *g.type, precision),
                                 0, 0};
    double efficiency = 0;
    for (WorkKind kind : {WorkKind::forward, WorkKind::backward})
      efficiency =
          std::max(efficiency, calibrated(base, cal, g.type->name, kind).matmul_efficiency);
    rate_.push_back(peak * efficiency);
    capacity_.push_back(g.type->memory_bytes);
  }
}

std::vector<int> PlanFloor::one_per_vm(const std::vector<int>& devices) const {
  std::vector<int> out;
  std::vector<bool> seen(slice_.vms.size(), false);
  for (int dev : devices)
    if (!seen[std::size_t(vm_[dev])]) seen[std::size_t(vm_[dev])] = true, out.push_back(dev);
  return out;
}

double PlanFloor::least_latency(const std::vector<int>& from, const std::vector<int>& to) const {
  auto key = std::make_pair(from, to);
  if (const auto it = least_latency_.find(key); it != least_latency_.end()) return it->second;
  double least = 1e300;
  const std::vector<int> a_vms = one_per_vm(from), b_vms = one_per_vm(to);
  for (int a : a_vms)  // distinct devices, also within a VM: the sets are disjoint
    for (int b : b_vms) least = std::min(least, platform_.route_latency(a, b));
  return least_latency_.emplace(std::move(key), least).first->second;
}

const std::vector<PlanFloor::Stage>& PlanFloor::stages(const Plan& plan, int global_batch) const {
  const int b = global_batch / plan.dp / plan.mb;
  StageKey key{b, plan.tp, plan.pp, plan.dp, plan.zero, plan.recompute, plan.layers};
  if (const auto it = stages_.find(key); it != stages_.end()) return it->second;
  std::vector<Stage> out;
  const auto ranges = stage_blocks(model_, plan);
  for (int s = 0; s < int(ranges.size()); ++s) {
    Stage st;
    for (int i = ranges[s].begin; i < ranges[s].end; ++i) {
      const Block block = block_at(model_, i);
      st.forward += forward_cost(model_, block, b, seq_, plan.tp, plan.precision).flops;
      st.backward += backward_cost(model_, block, b, seq_, plan.tp, plan.precision).flops;
      if (plan.recompute && !replicated_over_tp(block))
        st.backward += forward_cost(model_, block, b, seq_, plan.tp, plan.precision).flops;
      st.activations +=
          activation_bytes(model_, block, b, seq_, plan.tp, plan.precision, plan.recompute);
    }
    st.state =
        model_state_bytes(stage_parameters(model_, plan, s), plan.precision, plan.zero, plan.dp)
            .total();
    out.push_back(st);
  }
  return stages_.emplace(std::move(key), std::move(out)).first->second;
}

// What `calls` calls moving `bytes` in all take at least over the slowest site cut of the devices:
// every site's members must exchange that volume with the other sites (step_lower_bound's
// collective term, per call). A call's flow of b bytes takes at least b at the route's line rate,
// and at least (b - window) at its long-flow rate (sim/tcp_window.hpp), whichever route of the cut
// it takes; summed over the calls, the fastest route's rates and the largest window bound them.
// 0 for devices at one site.
double PlanFloor::cut_seconds(const std::vector<int>& devices, double bytes, int calls) const {
  const auto key = std::make_tuple(devices, bytes, calls);
  if (const auto it = cut_seconds_.find(key); it != cut_seconds_.end()) return it->second;
  const auto gpus = slice_.gpus();
  auto site = [&](int dev) -> const std::string& { return slice_.vms[gpus[dev].vm].site; };
  struct Out {
    double line = 0, long_flow = 0, window = 0;  // the fastest rates, the largest window
  };
  std::map<std::string, Out> out_of;
  const std::vector<int> vms = one_per_vm(devices);
  for (int a : vms)
    for (int b : vms)
      if (site(a) != site(b)) {
        Out& o = out_of[site(a)];
        o.line = std::max(o.line, platform_.route_line_rate(a, b));
        o.long_flow = std::max(o.long_flow, platform_.route_bandwidth(a, b));
        o.window = std::max(o.window, platform_.route_window(a, b));
      }
  double slowest = 0;
  for (const auto& [s, o] : out_of) {
    if (!(o.line > 0) || !(o.long_flow > 0)) continue;  // unlimited: no term
    const double windowed = o.window > 0 ? (bytes - calls * o.window) / o.long_flow : 0.0;
    slowest = std::max({slowest, bytes / o.line, windowed});
  }
  return cut_seconds_.emplace(key, slowest).first->second;
}

// The gradients' collectives of the data-parallel groups that span sites, one after another on
// each rank: the stage's parameter bytes (all-reduce) or their (dp - 1)/dp share (ZeRO's
// reduce-scatter), as step_lower_bound counts each bucket's call, summed.
double PlanFloor::gradient_seconds(const Plan& plan) const {
  if (plan.dp == 1 || calibrated_collectives_) return 0;
  double worst = 0;
  for (int r = 0; r < plan.ranks(); ++r) {
    const RankCoord c = rank_coord(plan, r);
    if (c.dp != 0) continue;  // one rank per group
    std::vector<int> group;
    for (int d = 0; d < plan.dp; ++d)
      group.push_back(device_of(plan, rank_of(plan, {d, c.tp, c.pp})));
    std::sort(group.begin(), group.end());
    double bytes = stage_parameters(model_, plan, c.pp) * element_bytes(plan.precision);
    if (plan.zero > 0) bytes *= double(plan.dp - 1) / plan.dp;
    // One call per bucket; ZeRO-2/3 reduce every microbatch's gradients (plan/compile.cpp), so
    // they move the bytes mb times, in mb times the calls.
    const int times = plan.zero >= 2 ? plan.mb : 1;
    const int buckets = int(gradient_buckets(model_, plan, c.pp).size());
    worst = std::max(worst, cut_seconds(group, bytes * times, buckets * times));
  }
  return worst;
}

double PlanFloor::seconds_per_token(const Plan& plan, int global_batch) const {
  const auto& st = stages(plan, global_batch);
  const double inf = 1e300;
  std::vector<double> first_forward(plan.pp, inf), last_backward(plan.pp, inf), hop(plan.pp, inf);
  std::vector<std::vector<int>> devices(plan.pp);
  for (int r = 0; r < plan.ranks(); ++r) {
    const int stage = rank_coord(plan, r).pp, dev = device_of(plan, r);
    if (!(rate_[dev] > 0)) return 0;
    devices[stage].push_back(dev);
    first_forward[stage] = std::min(first_forward[stage], st[stage].forward / rate_[dev]);
    last_backward[stage] = std::min(last_backward[stage], st[stage].backward / rate_[dev]);
  }
  for (int s = 0; s + 1 < plan.pp; ++s) hop[s] = least_latency(devices[s], devices[s + 1]);
  double worst = 0, fill = 0;
  for (int s = 0; s < plan.pp; ++s) {
    double slowest = 0;
    for (int dev : devices[s])
      slowest = std::max(slowest, plan.mb * (st[s].forward + st[s].backward) / rate_[dev]);
    worst = std::max(worst, slowest + fill);
    fill += first_forward[s] + last_backward[s] + 2 * hop[s];
  }
  return std::max(worst, gradient_seconds(plan)) / (double(global_batch) * seq_);
}

double PlanFloor::seconds_per_token_on(const std::vector<int>& devices) const {
  double rate = 0;
  for (int dev : devices) {
    if (!(rate_[dev] > 0)) return 0;
    rate += rate_[dev];
  }
  Plan whole;  // one rank holding the model: its FLOPs are the least any split adds up to
  whole.precision = precision_;
  const Stage& st = stages(whole, 1).front();
  return (st.forward + st.backward) / seq_ / rate;
}

double PlanFloor::fastest_gpu_seconds_per_token(const std::vector<int>& devices) const {
  int fastest = devices.front();
  for (int dev : devices)
    if (rate_[dev] > rate_[fastest]) fastest = dev;
  return seconds_per_token_on({fastest});
}

int PlanFloor::short_of_memory(const Plan& plan, int global_batch, double* bytes) const {
  const auto& st = stages(plan, global_batch);
  int worst = -1;
  double worst_excess = 0;  // the rank with the least headroom, as estimate_memory() names it
  for (int r = 0; r < plan.ranks(); ++r) {
    const int stage = rank_coord(plan, r).pp, dev = device_of(plan, r);
    // Microbatches whose activations are held at once: every one under GPipe; under 1F1B a stage
    // runs pp - stage forwards before its first backward frees any.
    const int held =
        plan.schedule == PipelineSchedule::gpipe ? plan.mb : std::min(plan.mb, plan.pp - stage);
    const double need = st[stage].state + held * st[stage].activations + framework_bytes_[dev];
    if (need - capacity_[dev] > worst_excess) {
      worst = r, worst_excess = need - capacity_[dev];
      if (bytes) *bytes = need;
    }
  }
  return worst;
}

}  // namespace fabtrain
