// The plan compiler: one training step of (model, plan, batch) as every rank's ordered
// instruction stream. Pure: it only builds data. The order it picks is the contract the simulator
// and the executor play, so the choices are spelled out here:
//   - per microbatch a stage does: LoadMicrobatch (first and last stage), Recv activation (not
//     the first stage), per ZeRO-3 bucket [its all-gather] its Forward(s) with the tensor-
//     parallel all-reduce after each attn/mlp block, Send activation (not the last stage);
//     backward mirrors it: Recv gradient (not the last stage), per gradient bucket (walked from
//     the last block to the first) [ZeRO-3 all-gather] its Backward(s) [and, overlapped, the
//     bucket's gradient collective start], Send gradient (not the first stage);
//   - GPipe: all forwards in microbatch order 0..m-1, then all backwards in the same order 0..m-1
//     (first in, first out, like 1F1B, so a stage receives gradients in the order they are sent);
//   - 1F1B (Megatron's order): stage r of p does min(p-r-1, m) warm-up forwards, then steady
//     pairs (forward of the next microbatch, backward of the oldest), then cool-down backwards;
//   - gradients go in buckets (plan/buckets.hpp), the same with overlap on and off: zero=0/1
//     reduce once, after the last microbatch's backward (DDP's no_sync accumulation); zero=2/3
//     reduce-scatter every microbatch (DeepSpeed's ZeRO-2 keeps only its gradient shard, so it
//     cannot hold a microbatch's full gradients until the last one);
//   - after the last backward: the data-parallel reduction's waits (or, overlap=off, its blocking
//     bucket collectives), the tied-embedding all-reduce (pp > 1, first and last stage), the
//     gradient-norm all-reduce over all ranks, the optimizer step, and under zero=1/2 the
//     all-gathers of the updated parameters, per bucket.
// overlap=on (starts and waits: requests.hpp; pipeline: pipeline_transfers.hpp): gradient buckets
// start right after their blocks' backward and are waited before the gradient norm (zero=2/3:
// two at most in flight, and before the next microbatch's backward of the same bucket reuses the
// buffer); ZeRO-3 gathers the
// next bucket one ahead and waits right before the compute that needs it; pipeline sends start and
// are waited before the next send of the same tensor (the last at the end of the step); a stage's
// receive of microbatch k+1 is posted right after that of k completes (the first at the step's
// start) and waited right before its compute. Tensor-parallel all-reduces stay blocking (inside a
// block, on the critical path). overlap=off: every instruction blocks, in the order above. With
// eager sends and blocking receives this order cannot deadlock: every receive waits only on a send
// its peer issues earlier in its own stream (plan/symbolic_run.hpp checks it, and that every wait's
// start can complete).
#include <algorithm>
#include <map>
#include <utility>

#include "common/error.hpp"
#include "common/limits.hpp"
#include "plan/block_work.hpp"
#include "plan/buckets.hpp"
#include "plan/collective_pairing.hpp"
#include "plan/pipeline_transfers.hpp"
#include "plan/requests.hpp"
#include "plan/schedule.hpp"

namespace fabtrain {
namespace {

class StepBuilder {
 public:
  StepBuilder(const ModelSpec& model, const Plan& plan, int global_batch, int seq)
      : m_(model),
        plan_(plan),
        b_(global_batch / (plan.dp * plan.mb)),
        s_(seq),
        e_(element_bytes(plan.precision)),
        stages_(stage_blocks(model, plan)) {
    schedule_.world = plan.ranks();
    schedule_.plan = plan;
    schedule_.global_batch = global_batch;
    schedule_.microbatch = b_;
    schedule_.seq = seq;
    schedule_.ranks.resize(plan.ranks());
    for (int stage = 0; stage < plan.pp; ++stage)
      buckets_.push_back(gradient_buckets(model, plan, stage));
    for (auto& stream : schedule_.ranks) requests_.emplace_back(stream);
    gradients_.resize(plan.ranks());
    make_groups();
    const double boundary = boundary_bytes(model, b_, s_, plan.precision);
    for (int r = 0; r < plan.ranks(); ++r) {
      const RankCoord c = rank_coord(plan, r);
      const int previous = c.pp > 0 ? rank_of(plan, {c.dp, c.tp, c.pp - 1}) : -1;
      const int next = c.pp + 1 < plan.pp ? rank_of(plan, {c.dp, c.tp, c.pp + 1}) : -1;
      const bool scatter = plan.pipeline_scatter && plan.tp > 1;
      pipe_.emplace_back(schedule_.ranks[r], requests_[r], plan.overlap, plan.mb, boundary,
                         previous, next, scatter ? TpScatter{tp_group_[r], plan.tp} : TpScatter{});
    }
  }

  Schedule build() {
    for (int rank = 0; rank < plan_.ranks(); ++rank) {
      const int stage = rank_coord(plan_, rank).pp;
      schedule_.model_state.push_back(model_state_bytes(stage_parameters(m_, plan_, stage),
                                                        plan_.precision, plan_.zero, plan_.dp));
      schedule_.static_bytes.push_back(schedule_.model_state.back().total());
      schedule_.ranks[rank].reserve(expected_instructions(stage));
      emit_step(rank);
    }
    return std::move(schedule_);
  }

 private:
  // About how many instructions a rank of this stage gets (compute per block with tp > 1 and its
  // collectives, transfers and waits per microbatch, gradient buckets), so that its stream is
  // allocated once: a search compiles thousands of plans, and growing them was a tenth of its time.
  std::size_t expected_instructions(int stage) const {
    const int blocks = stages_[stage].end - stages_[stage].begin;
    const int buckets = int(buckets_[stage].size());
    const int compute = plan_.tp > 1 ? 2 * blocks + 4 : 1;
    const int per_microbatch =
        2 * compute + 8 + (plan_.zero >= 2 ? 3 * buckets : 0) + (plan_.zero == 3 ? 4 * buckets : 0);
    return std::size_t(plan_.mb) * per_microbatch + 3 * buckets + 8;
  }

  void add_group(GroupKind kind, std::vector<int> ranks) {
    schedule_.groups.push_back(std::move(ranks));
    schedule_.group_kinds.push_back(kind);
  }

  void make_groups() {
    const int n = plan_.ranks();
    tp_group_.assign(n, -1);
    dp_group_.assign(n, -1);
    tied_group_.assign(n, -1);
    if (plan_.tp > 1)
      for (int p = 0; p < plan_.pp; ++p)
        for (int d = 0; d < plan_.dp; ++d) {
          const std::vector<int> g = tp_group(plan_, rank_of(plan_, {d, 0, p}));
          for (int r : g) tp_group_[r] = int(schedule_.groups.size());
          add_group(GroupKind::tp, g);
        }
    if (plan_.dp > 1)
      for (int p = 0; p < plan_.pp; ++p)
        for (int t = 0; t < plan_.tp; ++t) {
          const std::vector<int> g = dp_group(plan_, rank_of(plan_, {0, t, p}));
          for (int r : g) dp_group_[r] = int(schedule_.groups.size());
          add_group(GroupKind::dp, g);
        }
    if (plan_.pp > 1 && m_.tie_word_embeddings)  // untied: the head's matrix is its own
      for (int d = 0; d < plan_.dp; ++d)
        for (int t = 0; t < plan_.tp; ++t) {
          const std::vector<int> g = {rank_of(plan_, {d, t, 0}),
                                      rank_of(plan_, {d, t, plan_.pp - 1})};
          for (int r : g) tied_group_[r] = int(schedule_.groups.size());
          add_group(GroupKind::tied_embedding, g);
        }
    world_group_ = int(schedule_.groups.size());
    std::vector<int> all(n);
    for (int r = 0; r < n; ++r) all[r] = r;
    add_group(GroupKind::world, all);
  }

  // The operation follows from the purpose (collective_pairing.hpp), so the two cannot disagree.
  Collective collective(Purpose purpose, int group, double bytes, int mb = -1,
                        int block = -1) const {
    return Collective{op_for(purpose), purpose, group, bytes, mb, block};
  }

  // A bucket's collective over the data-parallel group: bytes of its blocks' parameters.
  Collective bucket_collective(Purpose purpose, int rank, int stage, BlockRange bucket,
                               int mb) const {
    Collective c =
        collective(purpose, dp_group_[rank], bucket_parameters(m_, plan_, stage, bucket) * e_, mb);
    c.begin = bucket.begin;
    c.end = bucket.end;
    return c;
  }

  Purpose gradient_purpose() const {
    return plan_.zero == 0 ? Purpose::dp_gradients : Purpose::zero_gradients;
  }

  double stage_parameter_bytes(int stage) const { return stage_parameters(m_, plan_, stage) * e_; }

  // The work of blocks [begin, end) for microbatch mb: the same for every microbatch, so summed
  // once per range and copied (compiling is most of a search's time).
  Instruction work_of(int mb, int begin, int end, bool forward) {
    const std::pair<int, int> key{begin, end};
    if (forward) {
      auto it = forward_work_.find(key);
      if (it == forward_work_.end())
        it = forward_work_.emplace(key, forward_of(m_, plan_, b_, s_, 0, begin, end)).first;
      Forward f = it->second;
      f.mb = mb;
      return f;
    }
    auto it = backward_work_.find(key);
    if (it == backward_work_.end())
      it = backward_work_.emplace(key, backward_of(m_, plan_, b_, s_, 0, begin, end)).first;
    Backward w = it->second;
    w.mb = mb;
    return w;
  }

  // Forward or backward compute of blocks [begin, end): one instruction, or with tp > 1 one per
  // block, each followed by its tensor-parallel all-reduces (blocking, tp_collective_bytes).
  void compute(int rank, int mb, BlockRange range, bool forward) {
    auto& out = schedule_.ranks[rank];
    if (plan_.tp == 1) {
      out.push_back(work_of(mb, range.begin, range.end, forward));
      return;
    }
    for (int k = 0; k < range.end - range.begin; ++k) {
      const int i = forward ? range.begin + k : range.end - 1 - k;
      out.push_back(work_of(mb, i, i + 1, forward));
      for (double bytes : tp_collective_bytes(block_at(m_, i), forward))
        out.push_back(collective(forward ? Purpose::tp_forward : Purpose::tp_backward,
                                 tp_group_[rank], bytes, mb, i));
    }
  }

  // The all-reduces over the tp group after a block: an attention or MLP block's output (forward)
  // and input gradient (backward), Megatron-LM's row- and column-parallel pair. Under
  // vocab=parallel (Megatron-LM's VocabParallelEmbedding, parallel output layer and
  // _VocabParallelCrossEntropy): the embedding's output, each rank having looked up only its
  // vocabulary's rows; the loss's three over the tokens in fp32 (the logits' maximum, the target's
  // logit, the sum of exponentials); and the head's input gradient. A whole embedding or head:
  // none.
  std::vector<double> tp_collective_bytes(Block block, bool forward) const {
    const double boundary = boundary_bytes(m_, b_, s_, plan_.precision);
    if (!replicated_over_tp(block)) return {boundary};
    if (!plan_.vocab_parallel) return {};
    if (block.kind == BlockKind::embed)
      return forward ? std::vector<double>{boundary} : std::vector<double>{};
    const double per_token = double(b_) * s_ * 4;
    return forward ? std::vector<double>{per_token, per_token, per_token}
                   : std::vector<double>{boundary};
  }

  // ZeRO-3: compute over the buckets in the given order, each after the all-gather of its
  // parameters (overlap=on: the next bucket's gather starts before this bucket's wait).
  // before(i) and after(i) run right before and after bucket i's compute.
  template <class Before, class After>
  void gathered_compute(int rank, int mb, const std::vector<BlockRange>& buckets, bool forward,
                        Before before, After after) {
    const int stage = rank_coord(plan_, rank).pp;
    auto gather = [&](std::size_t i) {
      return bucket_collective(Purpose::zero_parameters, rank, stage, buckets[i], mb);
    };
    int next = -1;  // request of the gather in flight for the bucket about to run
    if (plan_.overlap && !buckets.empty()) next = requests_[rank].start(gather(0));
    for (std::size_t i = 0; i < buckets.size(); ++i) {
      if (plan_.overlap) {
        const int current = next;
        next = i + 1 < buckets.size() ? requests_[rank].start(gather(i + 1)) : -1;
        requests_[rank].wait(current);
      } else {
        schedule_.ranks[rank].push_back(gather(i));
      }
      before(i);
      compute(rank, mb, buckets[i], forward);
      after(i);
    }
  }

  void emit_forward(int rank, int mb) {
    auto& out = schedule_.ranks[rank];
    const RankCoord c = rank_coord(plan_, rank);
    const bool first = c.pp == 0, last = c.pp == plan_.pp - 1;
    if (first || last) out.push_back(LoadMicrobatch{mb, b_, b_ * s_});
    if (!first) pipe_[rank].receive(Tensor::activation, mb);
    if (plan_.zero == 3) {
      std::vector<BlockRange> forward_order(buckets_[c.pp].rbegin(), buckets_[c.pp].rend());
      auto nothing = [](std::size_t) {};
      gathered_compute(rank, mb, forward_order, true, nothing, nothing);
    } else {
      compute(rank, mb, stages_[c.pp], true);
    }
    if (!last) pipe_[rank].send(Tensor::activation, mb);
  }

  // Whether this backward reduces its gradients: every microbatch under zero=2/3, the last one
  // under zero=0/1 (accumulated until then).
  bool reduces_gradients(int mb) const {
    return plan_.dp > 1 && (plan_.zero >= 2 || mb == plan_.mb - 1);
  }

  void emit_backward(int rank, int mb) {
    auto& out = schedule_.ranks[rank];
    const RankCoord c = rank_coord(plan_, rank);
    const bool first = c.pp == 0, last = c.pp == plan_.pp - 1;
    const auto& buckets = buckets_[c.pp];
    if (!last) pipe_[rank].receive(Tensor::gradient, mb);
    const int grad_mb = plan_.zero >= 2 ? mb : -1;
    const bool overlapped = plan_.overlap && reduces_gradients(mb);
    // overlap=on: bucket i's collective starts once its blocks' backward is done; under zero=2/3
    // the previous microbatch's collective of the bucket is waited before its buffer is reused.
    auto before_bucket = [&](std::size_t i) {
      auto& pending = gradients_[rank];
      if (plan_.overlap && pending.count(int(i))) {
        requests_[rank].wait(pending.at(int(i)));
        pending.erase(int(i));
      }
    };
    // Under zero=2/3 at most two buckets are in flight (DeepSpeed's double-buffered reduce
    // buckets): bucket i-2 is waited before bucket i starts, so the gradients in flight stay
    // two buckets, not the stage's full gradients ZeRO-2/3 exist to avoid holding.
    auto after_bucket = [&](std::size_t i) {
      if (!overlapped) return;
      auto& pending = gradients_[rank];
      if (plan_.zero >= 2 && i >= 2 && pending.count(int(i) - 2)) {
        requests_[rank].wait(pending.at(int(i) - 2));
        pending.erase(int(i) - 2);
      }
      pending[int(i)] = requests_[rank].start(
          bucket_collective(gradient_purpose(), rank, c.pp, buckets[i], grad_mb));
    };
    if (plan_.zero == 3) {
      gathered_compute(rank, mb, buckets, false, before_bucket, after_bucket);
    } else if (overlapped) {
      for (std::size_t i = 0; i < buckets.size(); ++i) {
        before_bucket(i);
        compute(rank, mb, buckets[i], false);
        after_bucket(i);
      }
    } else {
      compute(rank, mb, stages_[c.pp], false);
    }
    if (!first) pipe_[rank].send(Tensor::gradient, mb);
    if (!plan_.overlap && plan_.zero >= 2)
      for (const BlockRange& bucket : buckets)
        out.push_back(bucket_collective(Purpose::zero_gradients, rank, c.pp, bucket, mb));
  }

  void emit_step(int rank) {
    const RankCoord c = rank_coord(plan_, rank);
    const int m = plan_.mb;
    pipe_[rank].start_step();
    if (plan_.schedule == PipelineSchedule::gpipe) {
      for (int mb = 0; mb < m; ++mb) emit_forward(rank, mb);
      for (int mb = 0; mb < m; ++mb) emit_backward(rank, mb);
    } else {
      const int warmup = std::min(plan_.pp - c.pp - 1, m);
      for (int mb = 0; mb < warmup; ++mb) emit_forward(rank, mb);  // warm-up
      for (int i = 0; i < m - warmup; ++i) {                       // steady: 1F1B
        emit_forward(rank, warmup + i);
        emit_backward(rank, i);
      }
      for (int mb = m - warmup; mb < m; ++mb) emit_backward(rank, mb);  // cool-down
    }
    emit_update(rank);
  }

  void emit_update(int rank) {
    auto& out = schedule_.ranks[rank];
    const RankCoord c = rank_coord(plan_, rank);
    const auto& buckets = buckets_[c.pp];
    // Gradients complete before the tied embedding's sum and the norm read them.
    for (const auto& [bucket, request] : gradients_[rank]) requests_[rank].wait(request);
    gradients_[rank].clear();
    if (plan_.dp > 1 && plan_.zero <= 1 && !plan_.overlap)
      for (const BlockRange& bucket : buckets)
        out.push_back(bucket_collective(gradient_purpose(), rank, c.pp, bucket, -1));
    if (tied_group_[rank] >= 0 && (c.pp == 0 || c.pp == plan_.pp - 1))
      out.push_back(collective(Purpose::tied_embedding, tied_group_[rank],
                               tied_copy_parameters(m_, plan_) * e_));
    // Two floats: the squared gradient norm and the step's loss, so reporting the loss costs no
    // call of its own.
    out.push_back(collective(Purpose::grad_norm, world_group_, 8));
    const double owned = stage_parameters(m_, plan_, c.pp) / (plan_.zero >= 1 ? plan_.dp : 1);
    out.push_back(OptimizerStep{owned, optimizer_bytes(owned)});
    if (plan_.zero == 1 || plan_.zero == 2)  // nothing left to hide them behind: blocking
      for (const BlockRange& bucket : buckets)
        out.push_back(bucket_collective(Purpose::zero_parameters, rank, c.pp, bucket, -1));
    pipe_[rank].end_step();
  }

  // AdamW reads weights and gradients and writes weights, reads and writes m and v (fp32), and
  // under mixed precision reads and writes the fp32 master weights.
  double optimizer_bytes(double parameters) const {
    const double fp32_state = element_bytes(plan_.precision) == 4 ? 16 : 24;
    return parameters * (3 * e_ + fp32_state);
  }

  const ModelSpec& m_;
  const Plan& plan_;
  int b_, s_;
  double e_;
  std::vector<BlockRange> stages_;
  std::vector<std::vector<BlockRange>> buckets_;  // per stage, backward order
  Schedule schedule_;
  std::vector<StreamRequests> requests_;  // per rank
  std::vector<PipelineTransfers> pipe_;   // per rank
  // per rank: bucket index -> request of its gradient collective in flight (overlap=on)
  std::vector<std::map<int, int>> gradients_;
  std::vector<int> tp_group_, dp_group_, tied_group_;    // group index of each rank, -1 if none
  std::map<std::pair<int, int>, Forward> forward_work_;  // by block range
  std::map<std::pair<int, int>, Backward> backward_work_;
  int world_group_ = -1;
};

}  // namespace

double stage_parameters(const ModelSpec& model, const Plan& plan, int stage) {
  const std::vector<BlockRange> stages = stage_blocks(model, plan);
  if (stage < 0 || stage >= int(stages.size()))
    fail("stage {} out of range for pp={}", stage, plan.pp);
  double parameters = 0;
  for (int i = stages[stage].begin; i < stages[stage].end; ++i)
    parameters +=
        double(block_parameters(model, block_at(model, i), split_of(plan, block_at(model, i))));
  if (plan.pp > 1 && stage == plan.pp - 1 && model.tie_word_embeddings)
    parameters += tied_copy_parameters(model, plan);
  return parameters;
}

int Schedule::group_of(int rank, GroupKind kind) const {
  for (std::size_t g = 0; g < groups.size() && g < group_kinds.size(); ++g)
    if (group_kinds[g] == kind &&
        std::find(groups[g].begin(), groups[g].end(), rank) != groups[g].end())
      return int(g);
  return -1;
}

Schedule compile(const ModelSpec& model, const Plan& plan, int global_batch, int seq) {
  validate(plan, model, global_batch);
  if (seq < 1 || seq > model.n_ctx)
    fail("seq={} must be between 1 and the context of {} ({} positions)", seq, model.name,
         model.n_ctx);
  check_limit("global batch", global_batch, limits::batch);
  // Estimated before building: a rank holds about 12 instructions per microbatch and stage
  // (transfers with their waits), or per block with tp > 1 (an all-reduce after each) or zero=2/3
  // (per bucket a gather, a reduce-scatter and their waits), plus its gradient collectives per
  // block.
  const std::int64_t blocks_per_stage = block_count(model) / plan.pp + 1;
  const std::int64_t per_block = plan.tp > 1 ? 4 : 0;
  const std::int64_t per_microbatch =
      (per_block + (plan.zero >= 2 ? 8 : 0)) * blocks_per_stage + 12;
  check_limit(
      fmt::format("the schedule of {} on {} ({} ranks, {} microbatches): its instruction count",
                  to_string(plan), model.name, plan.ranks(), plan.mb),
      std::int64_t(plan.ranks()) * (plan.mb * per_microbatch + 2 * blocks_per_stage),
      limits::instructions);
  return StepBuilder(model, plan, global_batch, seq).build();
}

}  // namespace fabtrain
