// Plays a rank's instruction stream (see interpreter.hpp for the scaling and ZeRO layout).
#include "exec/interpreter.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "common/error.hpp"
#include "exec/kernels_layout.hpp"
#include "exec/watchdog.hpp"

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
  holds_embed_ = range.begin == 0;
  holds_head_ = range.end == block_count(model);
  tokens_per_mb_ = schedule.microbatch * schedule.seq;
  blocks_end_ = block_count(model);
  tokens_.resize(tokens_per_mb_);
  targets_.resize(tokens_per_mb_);
  for (const Instruction& in : stream_) names_.push_back(to_string(in));
  // The step's loss travels in the gradient-norm call: a stream without one could not report it.
  if (std::none_of(stream_.begin(), stream_.end(), [](const Instruction& in) {
        const auto* c = std::get_if<Collective>(&in);
        return c && c->purpose == Purpose::grad_norm;
      }))
    fail("rank {}: the schedule has no gradient-norm call, which carries the step's loss", rank);

  dp_ = plan.dp;
  sharded_ = plan.zero >= 1 && plan.dp > 1;
  if (sharded_) {
    const std::vector<int> group = dp_group(plan, rank);
    for (std::size_t g = 0; g < schedule.groups.size(); ++g)
      if (schedule.groups[g] == group) dp_group_index_ = int(g);
    if (dp_group_index_ < 0) fail("rank {}: the schedule has no group for its dp replicas", rank);
    dp_position_ = int(std::find(group.begin(), group.end(), rank) - group.begin());
  }
  allocate_shards();
  build_masks(model);
  const std::size_t owned = sharded_ ? std::size_t(zero_.chunk_size()) : stage_.params().size();
  m_.assign(owned, 0.0f);
  v_.assign(owned, 0.0f);
  parameters_changed();
}

void Interpreter::allocate_shards() {
  if (sharded_) {
    shard_params_.assign(std::size_t(zero_.chunk_size()), 0.0f);
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
  if (sharded_) zero_.pack<float>(stage_.params(), dp_position_, shard_params_);
}

StepOutcome Interpreter::play_step(int step, float lr, const MicrobatchFeed& feed) {
  stage_.zero_grads();
  if (sharded_) std::fill(shard_grads_.begin(), shard_grads_.end(), 0.0f);
  scattered_ = false;
  scaled_ = false;
  clip_scale_ = 1.0f;
  grad_norm_ = 0;
  loss_sum_ = 0;
  mean_loss_ = 0;
  StepOutcome outcome;
  outcome.timings.resize(stream_.size());
  const Clock::time_point step_start = Clock::now();
  for (std::size_t i = 0; i < stream_.size(); ++i) {
    if (watchdog_)
      watchdog_->begin(
          fmt::format("rank {} step {} instruction {}: {}", rank_, step + 1, i, names_[i]));
    const Clock::time_point start = Clock::now();
    run(stream_[i], step, lr, feed, false);
    stage_.synchronize();  // a device backend's queued work belongs to this instruction
    const Clock::time_point end = Clock::now();
    if (watchdog_) watchdog_->end();
    outcome.timings[i] = {seconds_between(step_start, start), seconds_between(start, end)};
  }
  for (int mb = 0; mb < schedule_.plan.mb; ++mb) stage_.release(mb);
  outcome.loss_sum = loss_sum_;
  outcome.grad_norm = grad_norm_;
  outcome.mean_loss = mean_loss_;
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
    if (!keep) continue;
    if (watchdog_) watchdog_->begin(fmt::format("rank {} validation: {}", rank_, names_[i]));
    run(in, -1, 0.0f, feed, true);
    if (watchdog_) watchdog_->end();
  }
  for (int mb = 0; mb < schedule_.plan.mb; ++mb) stage_.release(mb);
  return loss_sum_;
}

void Interpreter::run(const Instruction& instruction, int step, float lr,
                      const MicrobatchFeed& feed, bool forward_only) {
  std::visit(
      [&](const auto& in) {
        using T = std::decay_t<decltype(in)>;
        if constexpr (std::is_same_v<T, LoadMicrobatch>) {
          feed(in.mb, tokens_, targets_);
          if (holds_embed_) stage_.set_tokens(in.mb, tokens_);
          if (holds_head_) stage_.set_targets(in.mb, targets_);
        } else if constexpr (std::is_same_v<T, Forward>) {
          for (int b = in.begin; b < in.end; ++b) stage_.forward(b, in.mb);
          if (holds_head_ && in.end == blocks_end_ && coord_.tp == 0)
            loss_sum_ += stage_.loss(in.mb);
        } else if constexpr (std::is_same_v<T, Backward>) {
          for (int b = in.end - 1; b >= in.begin; --b) stage_.backward(b, in.mb, in.recompute);
          dirty_since_scatter_ = true;
        } else if constexpr (std::is_same_v<T, Send>) {
          const auto data =
              in.what == Tensor::activation ? stage_.output(in.mb) : stage_.input_grad(in.mb);
          comm_.send(in.peer, data, tag(in.mb, in.what));
        } else if constexpr (std::is_same_v<T, Recv>) {
          const auto data =
              in.what == Tensor::activation ? stage_.input(in.mb) : stage_.output_grad(in.mb);
          comm_.recv(in.peer, data, tag(in.mb, in.what));
        } else if constexpr (std::is_same_v<T, Collective>) {
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
              comm_.all_reduce(in.group, stage_.grads());
              break;
            case Purpose::zero_gradients:
              reduce_scatter_gradients(in.group);
              break;
            case Purpose::zero_parameters:
              all_gather_parameters(in.group);
              break;
            case Purpose::tied_embedding:
              tied_embedding(in.group);
              break;
            case Purpose::grad_norm:
              gradient_norm(in.group);
              break;
          }
        } else if constexpr (std::is_same_v<T, OptimizerStep>) {
          if (!forward_only) optimizer_step(step, lr);
        } else {
          static_assert(std::is_same_v<T, Wait>);
          fail("overlap: wait is not played yet (rank {}, {})", rank_, to_string(instruction));
        }
      },
      instruction);
}

void Interpreter::ensure_scaled() {
  if (scaled_) return;
  scaled_ = true;
  const float scale = 1.0f / float(schedule_.plan.mb * schedule_.plan.dp);
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
  const std::size_t chunk = shard_params_.size();
  comm_.all_gather(group, shard_params_, flat_);
  for (int d = 0; d < dp_; ++d)
    zero_.unpack<float>(std::span<const float>(flat_).subspan(d * chunk, chunk), d,
                        stage_.params());
}

void Interpreter::tied_embedding(int group) {
  // Gradients still in the stage: sum the wte copies (in full-offset order on both stages).
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
  if (sharded_) {
    for (std::size_t i = 0; i < shard_grads_.size(); ++i)
      if (counted_shard_[i]) sum += double(shard_grads_[i]) * shard_grads_[i];
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
}

void Interpreter::optimizer_step(int step, float lr) {
  ensure_scaled();
  std::span<float> params = sharded_ ? std::span<float>(shard_params_) : stage_.params();
  std::span<float> grads = sharded_ ? std::span<float>(shard_grads_) : stage_.grads();
  if (clip_scale_ != 1.0f)
    for (float& g : grads) g *= clip_scale_;
  adamw_.update(params, grads, m_, v_, sharded_ ? decay_shard_ : decay_local_, lr, step + 1);
}

void Interpreter::gather_parameters() {
  if (!sharded_) return;
  all_gather_parameters(dp_group_index_);
}

}  // namespace fabtrain
