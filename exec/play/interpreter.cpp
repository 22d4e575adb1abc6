// Plays a rank's instruction stream (see interpreter.hpp for the scaling and ZeRO layout).
#include "exec/play/interpreter.hpp"

#include <algorithm>
#include <cmath>

#include "common/error.hpp"
#include "exec/comm/watchdog.hpp"
#include "exec/model/kernels_layout.hpp"
#include "exec/play/instruction_marks.hpp"
#include "plan/buckets.hpp"
#include "plan/request_rules.hpp"
#include "plan/verb.hpp"

namespace fabtrain {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Tensors whose rows or columns are split over tensor-parallel ranks (the rest is replicated).
bool split_over_tp(int tensor) {
  return tensor == t_qkvw || tensor == t_qkvb || tensor == t_attprojw || tensor == t_fcw ||
         tensor == t_fcb || tensor == t_fcprojw;
}

// ZeRO shards over the dp ranks when the plan asks for them, else one chunk of everything.
int zero_parts(const Plan& plan) { return plan.zero >= 1 && plan.dp > 1 ? plan.dp : 1; }

}  // namespace

Interpreter::Interpreter(const ModelSpec& model, const Schedule& schedule, int rank, Stage& stage,
                         Communicator& comm, AdamW adamw, float grad_clip, Watchdog* watchdog)
    : schedule_(schedule),
      stream_(schedule.ranks.at(rank)),
      rank_(rank),
      stage_(stage),
      comm_(comm),
      adamw_(adamw),
      grad_clip_(grad_clip),
      watchdog_(watchdog),
      zero_(stage.param_runs(), full_layout(model).size[t_wte], zero_parts(schedule.plan)) {
  const Plan& plan = schedule.plan;
  coord_ = rank_coord(plan, rank);
  const BlockRange range = stage_blocks(model, plan).at(coord_.pp);
  stage_range_ = range;
  holds_embed_ = range.begin == 0;
  holds_head_ = range.end == block_count(model);
  tokens_per_mb_ = schedule.microbatch * schedule.seq;
  blocks_end_ = block_count(model);
  tokens_.resize(tokens_per_mb_);
  targets_.resize(tokens_per_mb_);
  check_requests(stream_, rank);  // plan/request_rules.hpp: the player keeps no rule of its own
  for (const Instruction& in : stream_) names_.push_back(to_string(in));
  // The step's loss travels in the gradient-norm call: a stream without one could not report it.
  if (std::none_of(stream_.begin(), stream_.end(), [](const Instruction& in) {
        const auto* c = std::get_if<Collective>(&in);
        return c && c->purpose == Purpose::grad_norm;
      }))
    fail("rank {}: the schedule has no gradient-norm call, which carries the step's loss", rank);

  dp_ = plan.dp;
  if (plan.dp > 1) {
    buckets_ = gradient_buckets(model, plan, coord_.pp);
    bucket_segments_ = bucket_segments(model, stage.param_runs(), buckets_, holds_embed_);
    zero_ = ZeroLayout(stage.param_runs(), full_layout(model).size[t_wte], zero_parts(plan),
                       bucket_segments_);
  }
  sharded_ = plan.zero >= 1 && plan.dp > 1;
  if (sharded_) {
    dp_group_index_ = schedule.group_of(rank, GroupKind::dp);
    if (dp_group_index_ < 0) fail("rank {}: the schedule has no group for its dp replicas", rank);
    const std::vector<int>& group = schedule.groups[dp_group_index_];
    dp_position_ = int(std::find(group.begin(), group.end(), rank) - group.begin());
  }
  const bool shard_on_device = sharded_ && stage_.device_optimizer() && comm_.takes_device_memory();
  allocate_shards(shard_on_device);
  build_masks(model);
  const std::size_t owned = sharded_ ? std::size_t(zero_.chunk_size()) : stage_.params().size();
  m_.assign(owned, 0.0f);
  v_.assign(owned, 0.0f);
  device_optimizer_ = !sharded_ && stage_.device_optimizer();
  // ZeRO's shard stays in the backend's memory where the communicator moves that memory.
  if (shard_on_device)
    device_shard_ = std::make_unique<DeviceShard>(*stage_.device_ops(), zero_, dp_position_,
                                                  decay_shard_, counted_shard_);
  parameters_changed();
}

std::vector<float>& Interpreter::adam_m() {
  if (device_shard_) device_shard_->moments(&m_, nullptr);
  if (device_optimizer_) stage_.adam_state(&m_, nullptr);
  return m_;
}

std::vector<float>& Interpreter::adam_v() {
  if (device_shard_) device_shard_->moments(nullptr, &v_);
  if (device_optimizer_) stage_.adam_state(nullptr, &v_);
  return v_;
}

void Interpreter::allocate_shards(bool on_device) {
  if (sharded_) shard_params_.assign(std::size_t(zero_.chunk_size()), 0.0f);
  if (sharded_ && !on_device) {  // on the device, the host keeps only what sizes the masks
    shard_grads_.assign(shard_params_.size(), 0.0f);
    chunk_tmp_.assign(shard_params_.size(), 0.0f);
    flat_.assign(shard_params_.size() * std::size_t(dp_), 0.0f);
  }
  wte_buffer_.assign(std::size_t(zero_.wte_total()), 0.0f);
}

void Interpreter::build_masks(const ModelSpec& model) {
  const FullLayout layout = full_layout(model);
  const std::size_t n = stage_.params().size();
  decay_local_.assign(n, 0);
  counted_local_.assign(n, 0);
  for (const ParamRun& run : stage_.param_runs()) {
    std::fill_n(decay_local_.begin() + run.local_offset, run.count, run.decay ? 1 : 0);
    for (int t = 0; t < t_count; ++t) {
      const std::int64_t begin = std::max(run.full_offset, layout.offset[t]);
      const std::int64_t end =
          std::min(run.full_offset + run.count, layout.offset[t] + layout.size[t]);
      if (begin >= end) continue;
      // Counted once in a global sum: tp-replicated tensors on tp rank 0 only, the tied wte on
      // the first stage only (the dp dimension is handled by the caller).
      bool counted = coord_.tp == 0 || split_over_tp(t);
      if (t == t_wte && !holds_embed_) counted = false;
      std::fill_n(counted_local_.begin() + run.local_offset + (begin - run.full_offset),
                  end - begin, counted ? 1 : 0);
    }
  }
  if (sharded_) {
    decay_shard_.assign(shard_params_.size(), 0);
    counted_shard_.assign(shard_params_.size(), 0);
    zero_.pack<unsigned char>(decay_local_, dp_position_, decay_shard_);
    zero_.pack<unsigned char>(counted_local_, dp_position_, counted_shard_);
  }
}

void Interpreter::parameters_changed() {
  if (device_shard_) {
    device_shard_->pack(stage_.device_params().data(), -1, dp_position_, device_shard_->params());
    device_shard_->set_moments(m_, v_);
    return;
  }
  if (sharded_) zero_.pack<float>(stage_.params(), dp_position_, shard_params_);
  if (device_optimizer_) stage_.set_adam_state(m_, v_);
}

void Interpreter::set_loss_scaling(const LossScaling& settings) { loss_scaler_.emplace(settings); }

std::optional<LossScalerState> Interpreter::loss_scaling_state() const {
  if (!loss_scaler_) return std::nullopt;
  return loss_scaler_->state();
}

void Interpreter::restore_loss_scaling(const LossScalerState& state) {
  if (!loss_scaler_) fail("restore_loss_scaling: this run scales no loss");
  loss_scaler_->restore(state);
}

StepOutcome Interpreter::play_step(int step, float lr, const MicrobatchFeed& feed) {
  loss_scale_ = loss_scaler_ ? loss_scaler_->scale() : 1.0f;
  decision_ = LossScaler::Decision::apply;
  if (loss_scaler_) stage_.set_loss_scale(loss_scale_);
  stage_.zero_grads();
  if (device_shard_)
    device_shard_->zero_gradients();
  else if (sharded_)
    std::fill(shard_grads_.begin(), shard_grads_.end(), 0.0f);
  scattered_ = false;
  starts_ = 0;
  completed_early_.clear();
  scaled_ = false;
  clip_scale_ = 1.0f;
  grad_norm_ = 0;
  loss_sum_ = 0;
  mean_loss_ = 0;
  StepOutcome outcome;
  outcome.timings.resize(stream_.size());
  // A backend with marks on its queue is timed from them, waited for once after the step; any
  // other by the host clock, waiting after each instruction for the work it queued.
  const bool marks = stage_.has_marks();
  if (marks) stage_.mark(0);
  const Clock::time_point step_start = Clock::now();
  for (std::size_t i = 0; i < stream_.size(); ++i) {
    // Only waits on peers are watched: a long compute instruction is not a dead peer.
    const WatchedWait watch(
        is_communication(stream_[i]) ? watchdog_ : nullptr,
        fmt::format("rank {} step {} instruction {}: {}", rank_, step + 1, i, names_[i]));
    const Clock::time_point start = Clock::now();
    run(stream_[i], step, lr, feed, false);
    if (marks) {
      stage_.mark(int(i) + 1);
      continue;
    }
    stage_.synchronize();
    const Clock::time_point end = Clock::now();
    outcome.timings[i] = {seconds_between(step_start, start), seconds_between(start, end)};
  }
  if (marks) {
    stage_.synchronize();
    outcome.timings =
        timings_from_marks(stage_.mark_seconds(int(stream_.size()) + 1), stream_.size());
  }
  for (int mb = 0; mb < schedule_.plan.mb; ++mb) stage_.release(mb);
  outcome.loss_sum = loss_sum_;
  outcome.grad_norm = grad_norm_;
  outcome.mean_loss = mean_loss_;
  outcome.loss_scale = loss_scaler_ ? loss_scale_ : 0.0f;
  outcome.skipped = decision_ == LossScaler::Decision::skip;
  return outcome;
}

double Interpreter::evaluate(const MicrobatchFeed& feed) {
  loss_sum_ = 0;
  for (std::size_t i = 0; i < stream_.size(); ++i) {
    const Instruction& in = stream_[i];
    bool keep = std::holds_alternative<LoadMicrobatch>(in) || std::holds_alternative<Forward>(in);
    if (const auto* s = std::get_if<Send>(&in)) keep = s->what == Tensor::activation;
    if (const auto* r = std::get_if<Recv>(&in)) keep = r->what == Tensor::activation;
    if (const auto* c = std::get_if<Collective>(&in))
      keep = c->purpose == Purpose::tp_forward || c->purpose == Purpose::zero_parameters;
    // A wait is kept when its start was (only kept starts are in flight here).
    if (const auto* w = std::get_if<Wait>(&in)) keep = in_flight_.count(w->request) > 0;
    if (!keep) continue;
    const WatchedWait watch(is_communication(in) ? watchdog_ : nullptr,
                            fmt::format("rank {} validation: {}", rank_, names_[i]));
    run(in, -1, 0.0f, feed, true);
  }
  for (int mb = 0; mb < schedule_.plan.mb; ++mb) stage_.release(mb);
  return loss_sum_;
}

// One std::visit per instruction onto the play() overloads: an instruction without one does not
// compile.
void Interpreter::run(const Instruction& instruction, int step, float lr,
                      const MicrobatchFeed& feed, bool forward_only) {
  step_ = step;
  lr_ = lr;
  feed_ = &feed;
  forward_only_ = forward_only;
  std::visit([this](const auto& in) { play(in); }, instruction);
}

void Interpreter::play(const LoadMicrobatch& in) {
  (*feed_)(in.mb, tokens_, targets_);
  if (holds_embed_) stage_.set_tokens(in.mb, tokens_);
  if (holds_head_) stage_.set_targets(in.mb, targets_);
}

void Interpreter::play(const Forward& in) {
  if (!in_flight_.empty()) check_blocks("forward", {in.begin, in.end}, false);
  for (int b = in.begin; b < in.end; ++b) {
    stage_.forward(b, in.mb);
    if (!in_flight_.empty()) comm_.progress();
  }
  if (holds_head_ && in.end == blocks_end_ && coord_.tp == 0) loss_sum_ += stage_.loss(in.mb);
}

void Interpreter::play(const Backward& in) {
  if (!in_flight_.empty()) check_blocks("backward", {in.begin, in.end}, true);
  for (int b = in.end - 1; b >= in.begin; --b) {
    stage_.backward(b, in.mb, in.recompute);
    if (!in_flight_.empty()) comm_.progress();
  }
  dirty_since_scatter_ = true;
}

void Interpreter::play(const Send& in) {
  const auto data = in.what == Tensor::activation ? stage_.output(in.mb) : stage_.input_grad(in.mb);
  if (in.request < 0) {
    comm_.send(in.peer, data, tag(in.mb, in.what));
    return;
  }
  InFlight f;
  f.comm.push_back(comm_.start_send(in.peer, data, tag(in.mb, in.what)));
  started(in.request, std::move(f));
}

void Interpreter::play(const Recv& in) {
  const auto data = in.what == Tensor::activation ? stage_.input(in.mb) : stage_.output_grad(in.mb);
  if (in.request < 0) {
    comm_.recv(in.peer, data, tag(in.mb, in.what));
    return;
  }
  InFlight f;
  f.comm.push_back(comm_.start_recv(in.peer, data, tag(in.mb, in.what)));
  started(in.request, std::move(f));
}

void Interpreter::play(const Collective& in) {
  switch (in.purpose) {
    case Purpose::tp_forward:
      comm_.all_reduce(in.group, stage_.tp_partial(in.block, in.mb));
      stage_.finish_forward(in.block, in.mb);
      break;
    case Purpose::tp_backward:
      comm_.all_reduce(in.group, stage_.tp_partial(in.block, in.mb));
      stage_.finish_backward(in.block, in.mb);
      break;
    case Purpose::dp_gradients:
      if (in.block >= 0) fail("dp_gradients per block ({}) is not supported", in.block);
      start_dp_gradients(in);
      break;
    case Purpose::zero_gradients:
      start_zero_gradients(in);
      break;
    case Purpose::zero_parameters:
      start_zero_parameters(in);
      break;
    case Purpose::tied_embedding:
      check_quiet("the tied-embedding sum");
      tied_embedding(in.group);
      break;
    case Purpose::grad_norm:
      check_quiet("the gradient norm");
      gradient_norm(in.group);
      break;
    case Purpose::pipeline_gather:  // plan/executor_support.cpp refuses p2p=scatter first
      fail("the executor does not play pipeline transfers scattered over tp (p2p=scatter)");
  }
}

void Interpreter::play(const OptimizerStep&) {
  check_quiet("the optimizer step");
  if (!forward_only_) optimizer_step(step_, lr_);
}

void Interpreter::play(const Wait& in) {
  if (completed_early_.erase(in.request)) return;  // done with a later one's wait
  const auto it = in_flight_.find(in.request);     // there: the stream's requests were checked
  complete_earlier_scatters(it->second);
  complete(in.request);
}

// Reduce-scatters add into the shard in the order they started (as blocking ones do), whatever
// order their waits come in: earlier ones of the same bucket complete first.
void Interpreter::complete_earlier_scatters(const InFlight& flight) {
  const int bucket = flight.shard_bucket;
  if (bucket <= -2) return;
  std::vector<std::pair<long, int>> earlier;
  for (const auto& [request, f] : in_flight_)
    if (f.shard_bucket == bucket && f.order < flight.order) earlier.push_back({f.order, request});
  std::sort(earlier.begin(), earlier.end());
  for (const auto& [order, request] : earlier) {
    complete(request);
    completed_early_.insert(request);
  }
}

void Interpreter::started(int request, InFlight&& flight) {
  if (request < 0) {
    complete(flight);
    return;
  }
  flight.order = starts_++;
  in_flight_.emplace(request, std::move(flight));
}

void Interpreter::complete(InFlight& flight) {
  for (int r : flight.comm) comm_.wait(r);
  if (flight.finish) flight.finish();
}

void Interpreter::complete(int request) {
  auto it = in_flight_.find(request);  // completed in place: finish() points into it
  complete(it->second);
  in_flight_.erase(it);
}

void Interpreter::check_quiet(const char* what) const {
  for (const auto& [request, f] : in_flight_)
    if (f.gradients)
      fail("rank {}: {} reads gradients that request {} ({}) still has in flight", rank_, what,
           request, f.name);
}

void Interpreter::check_blocks(const char* what, BlockRange blocks, bool writes_grads) const {
  for (const auto& [request, f] : in_flight_) {
    const bool overlaps = f.blocks.begin < blocks.end && blocks.begin < f.blocks.end;
    if (overlaps && (f.parameters || (writes_grads && f.gradients)))
      fail("rank {}: {} of blocks {}:{} touches the {} of request {} ({}), still in flight", rank_,
           what, blocks.begin, blocks.end, f.parameters ? "parameters" : "gradients", request,
           f.name);
  }
}

int Interpreter::bucket_index(const Collective& c) const {
  if (c.begin < 0 && c.end < 0) return -1;
  for (std::size_t k = 0; k < buckets_.size(); ++k)
    if (buckets_[k].begin == c.begin && buckets_[k].end == c.end) return int(k);
  std::string known;
  for (const BlockRange& b : buckets_) known += fmt::format(" {}:{}", b.begin, b.end);
  fail("rank {}: {} names blocks {}:{}, which is not one of this stage's gradient buckets ({})",
       rank_, to_string(Instruction{c}), c.begin, c.end, known.empty() ? " none" : known);
}

BlockRange Interpreter::bucket_blocks(int k) const { return k < 0 ? stage_range_ : buckets_[k]; }

void Interpreter::start_dp_gradients(const Collective& c) {
  const int k = bucket_index(c);
  // Where the optimizer runs on the device and the communicator takes device memory, the
  // gradients are reduced where they are.
  const bool in_place = device_optimizer_ && comm_.takes_device_memory();
  const std::span<float> grads = in_place ? stage_.device_grads() : stage_.grads();
  if (k < 0 && c.request < 0) {  // the whole stage, blocking (as before buckets)
    comm_.all_reduce(c.group, grads);
    return;
  }
  InFlight f;
  f.name = to_string(Instruction{c});
  f.gradients = true;
  f.blocks = bucket_blocks(k);
  if (k < 0)
    f.comm.push_back(comm_.start_all_reduce(c.group, grads));
  else
    for (const auto& [at, n] : bucket_segments_[k])
      f.comm.push_back(comm_.start_all_reduce(c.group, grads.subspan(at, n)));
  started(c.request, std::move(f));
}

void Interpreter::start_zero_gradients(const Collective& c) {
  const int k = bucket_index(c);
  if (!sharded_) {  // one data-parallel rank: its gradients are already whole
    if (c.request >= 0) started(c.request, InFlight{});
    return;
  }
  if (device_shard_) {
    start_device_scatter(c, k);
    return;
  }
  if (k < 0 && c.request < 0) {
    reduce_scatter_gradients(c.group);
    return;
  }
  InFlight f;  // its blocks stay -1:-1: a backward may run meanwhile (the packed copy travels)
  f.name = to_string(Instruction{c});
  f.gradients = true;
  f.shard_bucket = k;
  const std::size_t part = std::size_t(k < 0 ? zero_.chunk_size() : zero_.bucket_part(k));
  f.in.assign(part * dp_, 0.0f);
  f.out.assign(part, 0.0f);
  const auto grads = stage_.grads();
  for (int d = 0; d < dp_; ++d) {
    const std::span<float> to = std::span<float>(f.in).subspan(d * part, part);
    if (k < 0)
      zero_.pack<float>(grads, d, to);
    else
      zero_.pack_bucket<float>(grads, k, d, to);
  }
  // The packed copy is what travels: the stage's gradients of the bucket start again from zero.
  if (k < 0)
    stage_.zero_grads();
  else
    for (const auto& [at, n] : bucket_segments_[k]) std::fill_n(grads.begin() + at, n, 0.0f);
  scattered_ = true;
  dirty_since_scatter_ = false;
  InFlight& placed = c.request < 0 ? f : (started(c.request, std::move(f)), in_flight_[c.request]);
  placed.comm.push_back(comm_.start_reduce_scatter(c.group, placed.in, placed.out));
  placed.finish = [this, k, out = &placed.out] {
    if (k < 0) {
      for (std::size_t i = 0; i < out->size(); ++i) shard_grads_[i] += (*out)[i];
      return;
    }
    for (const auto& [chunk_at, part_at, n] : zero_.bucket_in_chunk(k))
      for (std::int64_t i = 0; i < n; ++i) shard_grads_[chunk_at + i] += (*out)[part_at + i];
  };
  if (c.request < 0) complete(placed);
}

void Interpreter::start_zero_parameters(const Collective& c) {
  const int k = bucket_index(c);
  if (!sharded_) {
    if (c.request >= 0) started(c.request, InFlight{});
    return;
  }
  if (device_shard_) {
    start_device_gather(c.group, c.request, k, to_string(Instruction{c}));
    return;
  }
  if (k < 0 && c.request < 0) {
    all_gather_parameters(c.group);
    return;
  }
  InFlight f;
  f.name = to_string(Instruction{c});
  f.parameters = true;
  f.blocks = bucket_blocks(k);
  const std::size_t part = std::size_t(k < 0 ? zero_.chunk_size() : zero_.bucket_part(k));
  f.in.assign(part, 0.0f);
  f.out.assign(part * dp_, 0.0f);
  if (k < 0)
    std::copy(shard_params_.begin(), shard_params_.end(), f.in.begin());
  else
    for (const auto& [chunk_at, part_at, n] : zero_.bucket_in_chunk(k))
      std::copy_n(shard_params_.begin() + chunk_at, n, f.in.begin() + part_at);
  InFlight& placed = c.request < 0 ? f : (started(c.request, std::move(f)), in_flight_[c.request]);
  placed.comm.push_back(comm_.start_all_gather(c.group, placed.in, placed.out));
  placed.finish = [this, k, part, out = &placed.out] {
    const auto params = stage_.params();
    for (int d = 0; d < dp_; ++d) {
      const std::span<const float> from = std::span<const float>(*out).subspan(d * part, part);
      if (k < 0)
        zero_.unpack<float>(from, d, params);
      else
        zero_.unpack_bucket<float>(from, k, d, params);
    }
  };
  if (c.request < 0) complete(placed);
}

void Interpreter::ensure_scaled() {
  if (scaled_) return;
  scaled_ = true;
  // The loss scale is a power of two: the product is exact, and so is unscaling.
  const float scale = 1.0f / (float(schedule_.plan.mb * schedule_.plan.dp) * loss_scale_);
  if (device_shard_) {
    device_shard_->scale_gradients(scale);
    return;
  }
  if (device_optimizer_) {
    stage_.scale_grads(scale);
    return;
  }
  std::span<float> g = sharded_ ? std::span<float>(shard_grads_) : stage_.grads();
  for (float& x : g) x *= scale;
}

void Interpreter::reduce_scatter_gradients(int group) {
  if (!sharded_) return;  // one data-parallel rank: its gradients are already whole
  const std::size_t chunk = shard_grads_.size();
  for (int d = 0; d < dp_; ++d)
    zero_.pack<float>(stage_.grads(), d, std::span<float>(flat_).subspan(d * chunk, chunk));
  comm_.reduce_scatter(group, flat_, chunk_tmp_);
  for (std::size_t i = 0; i < chunk; ++i) shard_grads_[i] += chunk_tmp_[i];
  stage_.zero_grads();
  scattered_ = true;
  dirty_since_scatter_ = false;
}

void Interpreter::all_gather_parameters(int group) {
  if (!sharded_) return;
  if (device_shard_) {
    start_device_gather(group, -1, -1, "the parameters' all-gather");
    return;
  }
  const std::size_t chunk = shard_params_.size();
  comm_.all_gather(group, shard_params_, flat_);
  for (int d = 0; d < dp_; ++d)
    zero_.unpack<float>(std::span<const float>(flat_).subspan(d * chunk, chunk), d,
                        stage_.params());
}

void Interpreter::tied_embedding(int group) {
  if (device_shard_) {
    device_tied_embedding(group);
    return;
  }
  // Gradients still in the stage: sum the wte copies (in full-offset order on both stages).
  const Segments& wte = zero_.wte_segments();
  if (device_optimizer_ && comm_.takes_device_memory() && wte.size() == 1) {
    // One run of wte, summed where it is (the same elements in the same order as below).
    comm_.all_reduce(group, stage_.device_grads().subspan(wte[0].first, wte[0].second));
    return;
  }
  if (!scattered_ || dirty_since_scatter_) {
    const auto grads = stage_.grads();
    zero_.copy_wte_out(grads, wte_buffer_);
    comm_.all_reduce(group, wte_buffer_);
    zero_.copy_wte_in(wte_buffer_, grads);
  }
  // Gradients already reduce-scattered: both stages' shards start with the same wte slice.
  if (scattered_) comm_.all_reduce(group, std::span<float>(shard_grads_).first(zero_.wte_chunk()));
}

// Single steps whose norm jumps 20-200x (gpt2-nano early in training, the loss unchanged) are
// the true gradient, not a counting error: a finite difference of the loss along the gradient
// at such a step (step 19 of 8x64, lr 3e-3, seed 1337: 23.7) gives 19-24. One position's
// residual stream, small at GPT-2's 0.02 init and divided by its std in every LayerNorm, has a
// steep direction; clipping (--grad-clip) bounds the step it takes.
void Interpreter::gradient_norm(int group) {
  ensure_scaled();
  double sum = 0;
  if (device_shard_) {
    sum = device_shard_->gradient_square_sum();
  } else if (sharded_) {
    for (std::size_t i = 0; i < shard_grads_.size(); ++i)
      if (counted_shard_[i]) sum += double(shard_grads_[i]) * shard_grads_[i];
  } else if (coord_.dp == 0 && device_optimizer_) {
    sum = stage_.grad_square_sum(counted_local_);
  } else if (coord_.dp == 0) {  // dp replicas hold the same reduced gradients: count once
    const auto g = stage_.grads();
    for (std::size_t i = 0; i < g.size(); ++i)
      if (counted_local_[i]) sum += double(g[i]) * g[i];
  }
  // The loss rides along: each rank's share of the mean over the global batch (loss_sum_ is
  // complete here, every backward pass being done).
  float both[2] = {float(sum), float(loss_sum_ / double(schedule_.plan.mb * schedule_.plan.dp))};
  comm_.all_reduce(group, std::span<float>(both, 2));
  grad_norm_ = std::sqrt(both[0]);
  mean_loss_ = both[1];
  clip_scale_ = (grad_clip_ > 0 && grad_norm_ > grad_clip_) ? grad_clip_ / grad_norm_ : 1.0f;
  if (loss_scaler_) decision_ = loss_scaler_->update(grad_norm_);
}

void Interpreter::optimizer_step(int step, float lr) {
  ensure_scaled();
  if (decision_ != LossScaler::Decision::apply) return;  // overflowed: the parameters stay
  if (device_shard_) {
    device_shard_->adamw(adamw_, lr, step + 1, clip_scale_);
    return;
  }
  if (device_optimizer_) {
    stage_.adamw_step(adamw_, decay_local_, lr, step + 1, clip_scale_);
    return;
  }
  std::span<float> params = sharded_ ? std::span<float>(shard_params_) : stage_.params();
  std::span<float> grads = sharded_ ? std::span<float>(shard_grads_) : stage_.grads();
  if (clip_scale_ != 1.0f)
    for (float& g : grads) g *= clip_scale_;
  adamw_.update(params, grads, m_, v_, sharded_ ? decay_shard_ : decay_local_, lr, step + 1);
}

// ZeRO's collectives on the shard in the backend's memory: the same packing, the same order of
// additions and the same completion rules as the host shard's above, on device buffers that
// persist from step to step (DeviceShard::buffers).
void Interpreter::start_device_scatter(const Collective& c, int k) {
  DeviceShard& shard = *device_shard_;
  Gpt2Ops& ops = *stage_.device_ops();
  const std::int64_t part = k < 0 ? zero_.chunk_size() : zero_.bucket_part(k);
  const auto [in, out] = shard.buffers(c.request, part * dp_, part);
  const std::span<float> grads = stage_.device_grads();
  for (int d = 0; d < dp_; ++d) shard.pack(grads.data(), k, d, in + d * part);
  // The packed copy is what travels: the stage's gradients of the bucket start again from zero.
  if (k < 0)
    ops.zero(grads.data(), std::int64_t(grads.size()));
  else
    for (const auto& [at, n] : bucket_segments_[k]) ops.zero(grads.data() + at, n);
  scattered_ = true;
  dirty_since_scatter_ = false;
  InFlight f;
  f.name = to_string(Instruction{c});
  f.gradients = true;
  f.shard_bucket = k;
  f.comm.push_back(
      comm_.start_reduce_scatter(c.group, {in, std::size_t(part * dp_)}, {out, std::size_t(part)}));
  f.finish = [this, k, sum = out] { device_shard_->add_gradients(k, sum); };
  started(c.request, std::move(f));
}

void Interpreter::start_device_gather(int group, int request, int k, const std::string& name) {
  DeviceShard& shard = *device_shard_;
  const std::int64_t part = k < 0 ? zero_.chunk_size() : zero_.bucket_part(k);
  const auto [in, out] = shard.buffers(request, part, part * dp_);
  shard.take_params(k, in);
  InFlight f;
  f.name = name;
  f.parameters = true;
  f.blocks = bucket_blocks(k);
  f.comm.push_back(
      comm_.start_all_gather(group, {in, std::size_t(part)}, {out, std::size_t(part * dp_)}));
  f.finish = [this, k, part, all = out] {
    float* params = stage_.device_params().data();
    for (int d = 0; d < dp_; ++d) device_shard_->unpack(all + d * part, k, d, params);
  };
  started(request, std::move(f));
}

void Interpreter::device_tied_embedding(int group) {
  if (!scattered_ || dirty_since_scatter_) {
    // The stage's wte gradients in full-offset order, summed in a buffer of the backend's.
    std::vector<CopyRun> runs;
    std::int64_t total = 0;
    for (const auto& [at, n] : zero_.wte_segments()) {
      runs.push_back({at, total, n});
      total += n;
    }
    Gpt2Ops& ops = *stage_.device_ops();
    float* sum = device_shard_->buffers(-2, total, 0).first;
    const std::span<float> grads = stage_.device_grads();
    ops.copy_runs(sum, grads.data(), runs);
    comm_.all_reduce(group, {sum, std::size_t(total)});
    ops.copy_runs(grads.data(), sum, ZeroLayout::reversed(runs));
  }
  // Gradients already reduce-scattered: both stages' shards start with the same wte slice.
  if (scattered_) comm_.all_reduce(group, {device_shard_->grads(), std::size_t(zero_.wte_chunk())});
}

void Interpreter::gather_parameters() {
  if (!sharded_) return;
  all_gather_parameters(dp_group_index_);
}

}  // namespace fabtrain
