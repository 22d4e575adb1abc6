// The plan compiler: one training step of (model, plan, batch) as every rank's ordered
// instruction stream. Pure: it only builds data. The order it picks is the contract the simulator
// and the executor play, so the choices are spelled out here:
//   - per microbatch a stage does: LoadMicrobatch (first and last stage), [ZeRO-3 all-gather of
//     its parameters], Recv activation (not the first stage), its Forward(s) with the tensor-
//     parallel all-reduce after each attn/mlp block, Send activation (not the last stage);
//     backward mirrors it: [ZeRO-3 all-gather], Recv gradient (not the last stage), Backward(s)
//     walked from the last block to the first, Send gradient (not the first stage), [ZeRO-2/3
//     reduce-scatter of the gradients];
//   - GPipe: all forwards in microbatch order 0..m-1, then all backwards in the same order 0..m-1
//     (first in, first out, like 1F1B, so a stage receives gradients in the order they are sent);
//   - 1F1B (Megatron's order): stage r of p does min(p-r-1, m) warm-up forwards, then steady
//     pairs (forward of the next microbatch, backward of the oldest), then cool-down backwards;
//   - after the last backward: the data-parallel reduction (zero=0 all-reduce, zero=1
//     reduce-scatter), the tied-embedding all-reduce (pp > 1, first and last stage), the
//     gradient-norm all-reduce over all ranks, the optimizer step, and under zero=1/2 the
//     all-gather of the updated parameters.
// With eager sends and blocking receives this order cannot deadlock: every receive waits only on
// a send its peer issues earlier in its own stream (plan/symbolic_run.hpp checks it).
#include "common/error.hpp"
#include "common/limits.hpp"
#include "plan/collective_pairing.hpp"
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
    make_groups();
  }

  Schedule build() {
    for (int rank = 0; rank < plan_.ranks(); ++rank) {
      const int stage = rank_coord(plan_, rank).pp;
      schedule_.static_bytes.push_back(model_state_bytes(stage_parameters(m_, plan_, stage),
                                                         plan_.precision, plan_.zero, plan_.dp)
                                           .total());
      emit_step(rank);
    }
    return std::move(schedule_);
  }

 private:
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

  // Forward/Backward over blocks [begin, end) on one rank, costs summed over the blocks.
  Forward forward_of(int mb, int begin, int end) const {
    Forward f{mb, begin, end};
    bool all_replicated = true;
    for (int i = begin; i < end; ++i) {
      const Block block = block_at(m_, i);
      const WorkCost w =
          forward_cost(m_, block, b_, s_, plan_.tp, plan_.precision, plan_.attention);
      f.flops += w.flops;
      f.bytes += w.bytes;
      f.matmul_bytes += w.matmul_bytes;
      f.attention_flops += w.attention_flops;
      f.attention_bytes += w.attention_bytes;
      f.kernels += w.kernels;
      add_products(f.products, w.products);
      f.activation_bytes += activation_bytes(m_, block, b_, s_, plan_.tp, plan_.precision,
                                             plan_.recompute, plan_.attention);
      all_replicated = all_replicated && replicated_over_tp(block);
    }
    f.replicas = all_replicated ? plan_.tp : 1;
    return f;
  }

  Backward backward_of(int mb, int begin, int end) const {
    Backward bw{mb, begin, end};
    bool all_replicated = true;
    for (int i = begin; i < end; ++i) {
      const Block block = block_at(m_, i);
      const WorkCost w =
          backward_cost(m_, block, b_, s_, plan_.tp, plan_.precision, plan_.attention);
      bw.flops += w.flops;
      bw.bytes += w.bytes;
      bw.matmul_bytes += w.matmul_bytes;
      bw.attention_flops += w.attention_flops;
      bw.attention_bytes += w.attention_bytes;
      bw.kernels += w.kernels;
      add_products(bw.products, w.products);
      // Recomputation rebuilds the layers' activations; the embedding and head keep theirs.
      if (plan_.recompute && !replicated_over_tp(block)) {
        const WorkCost again =
            forward_cost(m_, block, b_, s_, plan_.tp, plan_.precision, plan_.attention);
        bw.flops += again.flops;
        bw.bytes += again.bytes;
        bw.matmul_bytes += again.matmul_bytes;
        bw.attention_flops += again.attention_flops;
        bw.attention_bytes += again.attention_bytes;
        bw.kernels += again.kernels;
        add_products(bw.products, again.products);
        bw.recompute = true;
      }
      bw.activation_bytes += activation_bytes(m_, block, b_, s_, plan_.tp, plan_.precision,
                                              plan_.recompute, plan_.attention);
      all_replicated = all_replicated && replicated_over_tp(block);
    }
    bw.replicas = all_replicated ? plan_.tp : 1;
    return bw;
  }

  // The operation follows from the purpose (collective_pairing.hpp), so the two cannot disagree.
  Collective collective(Purpose purpose, int group, double bytes, int mb = -1,
                        int block = -1) const {
    return Collective{op_for(purpose), purpose, group, bytes, mb, block};
  }

  double stage_parameter_bytes(int stage) const { return stage_parameters(m_, plan_, stage) * e_; }

  void emit_forward(int rank, int mb) {
    auto& out = schedule_.ranks[rank];
    const RankCoord c = rank_coord(plan_, rank);
    const BlockRange range = stages_[c.pp];
    const bool first = c.pp == 0, last = c.pp == plan_.pp - 1;
    if (first || last) out.push_back(LoadMicrobatch{mb, b_, b_ * s_});
    if (plan_.zero == 3)
      out.push_back(
          collective(Purpose::zero_parameters, dp_group_[rank], stage_parameter_bytes(c.pp), mb));
    if (!first)
      out.push_back(Recv{Tensor::activation, mb, rank_of(plan_, {c.dp, c.tp, c.pp - 1}),
                         boundary_bytes(m_, b_, s_, plan_.precision)});
    if (plan_.tp == 1) {
      out.push_back(forward_of(mb, range.begin, range.end));
    } else {
      for (int i = range.begin; i < range.end; ++i) {
        out.push_back(forward_of(mb, i, i + 1));
        if (!replicated_over_tp(block_at(m_, i)))
          out.push_back(collective(Purpose::tp_forward, tp_group_[rank],
                                   boundary_bytes(m_, b_, s_, plan_.precision), mb, i));
      }
    }
    if (!last)
      out.push_back(Send{Tensor::activation, mb, rank_of(plan_, {c.dp, c.tp, c.pp + 1}),
                         boundary_bytes(m_, b_, s_, plan_.precision)});
  }

  void emit_backward(int rank, int mb) {
    auto& out = schedule_.ranks[rank];
    const RankCoord c = rank_coord(plan_, rank);
    const BlockRange range = stages_[c.pp];
    const bool first = c.pp == 0, last = c.pp == plan_.pp - 1;
    if (plan_.zero == 3)
      out.push_back(
          collective(Purpose::zero_parameters, dp_group_[rank], stage_parameter_bytes(c.pp), mb));
    if (!last)
      out.push_back(Recv{Tensor::gradient, mb, rank_of(plan_, {c.dp, c.tp, c.pp + 1}),
                         boundary_bytes(m_, b_, s_, plan_.precision)});
    if (plan_.tp == 1) {
      out.push_back(backward_of(mb, range.begin, range.end));
    } else {
      for (int i = range.end - 1; i >= range.begin; --i) {
        out.push_back(backward_of(mb, i, i + 1));
        if (!replicated_over_tp(block_at(m_, i)))
          out.push_back(collective(Purpose::tp_backward, tp_group_[rank],
                                   boundary_bytes(m_, b_, s_, plan_.precision), mb, i));
      }
    }
    if (!first)
      out.push_back(Send{Tensor::gradient, mb, rank_of(plan_, {c.dp, c.tp, c.pp - 1}),
                         boundary_bytes(m_, b_, s_, plan_.precision)});
    if (plan_.zero >= 2)
      out.push_back(
          collective(Purpose::zero_gradients, dp_group_[rank], stage_parameter_bytes(c.pp), mb));
  }

  void emit_step(int rank) {
    const RankCoord c = rank_coord(plan_, rank);
    const int m = plan_.mb;
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
    const double param_bytes = stage_parameter_bytes(c.pp);
    if (plan_.dp > 1 && plan_.zero == 0)
      out.push_back(collective(Purpose::dp_gradients, dp_group_[rank], param_bytes));
    if (plan_.dp > 1 && plan_.zero == 1)
      out.push_back(collective(Purpose::zero_gradients, dp_group_[rank], param_bytes));
    if (tied_group_[rank] >= 0 && (c.pp == 0 || c.pp == plan_.pp - 1))
      out.push_back(collective(Purpose::tied_embedding, tied_group_[rank],
                               double(m_.vocab_size) * m_.n_embd * e_));
    // Two floats: the squared gradient norm and the step's loss, so reporting the loss costs no
    // call of its own.
    out.push_back(collective(Purpose::grad_norm, world_group_, 8));
    const double owned = stage_parameters(m_, plan_, c.pp) / (plan_.zero >= 1 ? plan_.dp : 1);
    out.push_back(OptimizerStep{owned, optimizer_bytes(owned)});
    if (plan_.zero == 1 || plan_.zero == 2)
      out.push_back(collective(Purpose::zero_parameters, dp_group_[rank], param_bytes));
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
  Schedule schedule_;
  std::vector<int> tp_group_, dp_group_, tied_group_;  // group index of each rank, -1 if none
  int world_group_ = -1;
};

}  // namespace

double stage_parameters(const ModelSpec& model, const Plan& plan, int stage) {
  const std::vector<BlockRange> stages = stage_blocks(model, plan);
  if (stage < 0 || stage >= int(stages.size()))
    fail("stage {} out of range for pp={}", stage, plan.pp);
  double parameters = 0;
  for (int i = stages[stage].begin; i < stages[stage].end; ++i)
    parameters += double(block_parameters(model, block_at(model, i), plan.tp));
  if (plan.pp > 1 && stage == plan.pp - 1 && model.tie_word_embeddings)
    parameters += double(model.vocab_size) * model.n_embd;  // the head's copy of the tied wte
  return parameters;
}

Schedule compile(const ModelSpec& model, const Plan& plan, int global_batch, int seq) {
  validate(plan, model, global_batch);
  if (seq < 1 || seq > model.n_ctx)
    fail("seq={} must be between 1 and the context of {} ({} positions)", seq, model.name,
         model.n_ctx);
  check_limit("global batch", global_batch, limits::batch);
  // Estimated before building: a rank holds about 4 instructions per microbatch and stage, or per
  // block with tp > 1 (an all-reduce after each), plus its gradient collectives per block.
  const std::int64_t blocks_per_stage = block_count(model) / plan.pp + 1;
  const std::int64_t per_microbatch = plan.tp > 1 ? 4 * blocks_per_stage : 8;
  check_limit(
      fmt::format("the schedule of {} on {} ({} ranks, {} microbatches): its instruction count",
                  to_string(plan), model.name, plan.ranks(), plan.mb),
      std::int64_t(plan.ranks()) * (plan.mb * per_microbatch + 2 * blocks_per_stage),
      limits::instructions);
  return StepBuilder(model, plan, global_batch, seq).build();
}

}  // namespace fabtrain
