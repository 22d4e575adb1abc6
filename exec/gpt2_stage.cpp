// Gpt2Stage (see gpt2_stage.hpp): one rank's blocks of GPT-2 on the CPU, fp32. Holds the rank's
// parameter shards contiguously in params()/grads(), the per-microbatch residual streams between
// blocks, each block's saved activations, and runs the kernels of kernels.hpp block by block.
// Not here: communication (the caller sums tp_partial() and moves input/output between stages),
// the optimizer, data loading.
#include "exec/gpt2_stage.hpp"

#include <algorithm>
#include <memory>

#include "common/error.hpp"
#include "exec/kernels.hpp"
#include "exec/kernels_layout.hpp"

namespace fabtrain {

namespace {

// One block's activations kept from forward for backward (the fields its kind uses).
struct Activations {
  std::vector<float> ln, mean, rstd;  // the block's LayerNorm output and statistics
  std::vector<float> qkv, att, y;     // attention: (n, 3C/tp), (b, NH/tp, t, t), (n, C/tp)
  std::vector<float> h, g;            // MLP: fc output before and after GELU, (n, 4C/tp)
  std::vector<float> logits, lse;     // head: (n, Vp) and per-row log-sum-exp
};

float* sized(std::vector<float>& v, std::int64_t size) {
  if (std::int64_t(v.size()) != size) v.assign(size, 0.0f);
  return v.data();
}

// Scratch space of at least `size` floats, contents undefined: it only grows, so blocks of
// different widths sharing it never pay for a reallocation or a zero fill.
float* scratch(std::vector<float>& v, std::int64_t size) {
  if (std::int64_t(v.size()) < size) v.resize(size);
  return v.data();
}

}  // namespace

struct Gpt2Stage::Impl {
  ModelSpec m;
  BlockRange blocks;
  int tp = 1, tp_rank = 0, b = 0, t = 0, n = 0, slots = 0;
  int L = 0, C = 0, hd = 0, nh_local = 0, c_local = 0, V = 0, Vp = 0;
  bool has_embed = false, has_head = false;
  bool keep_activations = true;  // false: one shared activation slot, backward must recompute

  std::vector<float> params, grads;
  std::vector<ParamRun> runs;
  std::vector<std::int64_t> local_offset;  // [(layer + 1) * t_count + tensor], -1 when absent

  // Per microbatch.
  std::vector<std::vector<int>> tokens, targets;
  std::vector<std::vector<float>> input, input_grad, output_grad, residual_grad;
  std::vector<std::vector<std::vector<float>>> block_out;  // [mb][block - begin]
  std::vector<std::vector<std::vector<float>>> partial;    // [mb][block - begin]
  std::vector<std::vector<char>> forwarded;                // [mb][block - begin]
  std::vector<float> losses;
  std::vector<std::vector<Activations>> acts;  // [slot][block - begin]
  // Backward scratch shared by all blocks (backward calls run one at a time).
  std::vector<float> scratch_a, scratch_b;

  int blocks_held() const { return blocks.end - blocks.begin; }
  std::int64_t off(FullTensor w, int layer) const {
    return local_offset[std::size_t(layer + 1) * t_count + w];
  }
  float* P(FullTensor w, int layer = -1) { return params.data() + off(w, layer); }
  float* G(FullTensor w, int layer = -1) { return grads.data() + off(w, layer); }

  void check(int block, int mb, const char* what) const {
    if (block < blocks.begin || block >= blocks.end)
      fail("Gpt2Stage::{}: block {} is not in this stage's blocks [{}, {})", what, block,
           blocks.begin, blocks.end);
    if (mb < 0 || mb >= slots)
      fail("Gpt2Stage::{}: microbatch {} is outside the {} activation slots", what, mb, slots);
  }
  void check_mb(int mb, const char* what) const {
    if (mb < 0 || mb >= slots)
      fail("Gpt2Stage::{}: microbatch {} is outside the {} activation slots", what, mb, slots);
  }

  Activations& act(int block, int mb) {
    return acts[keep_activations ? mb : 0][block - blocks.begin];
  }
  float* block_input(int block, int mb) {
    if (block == blocks.begin) return sized(input[mb], std::int64_t(n) * C);
    return block_out[mb][block - 1 - blocks.begin].data();
  }
  float* block_output(int block, int mb) {
    return sized(block_out[mb][block - blocks.begin], std::int64_t(n) * C);
  }
  float* partial_of(int block, int mb) {
    return sized(partial[mb][block - blocks.begin], std::int64_t(n) * C);
  }
  float* dres(int mb) { return sized(residual_grad[mb], std::int64_t(n) * C); }

  void build_layout();
  void add_tensor(FullTensor w, int layer, const std::vector<std::pair<std::int64_t, std::int64_t>>& pieces,
                  bool decay);

  // Forward up to (not including) the output projection; the head's forward entirely.
  void attn_branch(int block, int layer, int mb);
  void mlp_branch(int block, int layer, int mb);
  void head_forward(int block, int mb);
  void finish_forward(int block, int mb);
  void finish_backward(int block, int mb);
  void backward_done(int block, int mb);
  void require_split_block(int block, const char* what) const;
};

void Gpt2Stage::Impl::add_tensor(FullTensor w, int layer,
                                 const std::vector<std::pair<std::int64_t, std::int64_t>>& pieces,
                                 bool decay) {
  std::int64_t local = std::int64_t(params.size());
  local_offset[std::size_t(layer + 1) * t_count + w] = local;
  for (auto [full, count] : pieces) {
    ParamRun* last = runs.empty() ? nullptr : &runs.back();
    if (last && last->decay == decay && last->full_offset + last->count == full &&
        last->local_offset + last->count == local)
      last->count += count;
    else
      runs.push_back({full, local, count, decay});
    local += count;
  }
  params.resize(local, 0.0f);
}

void Gpt2Stage::Impl::build_layout() {
  const FullLayout full = full_layout(m);
  local_offset.assign(std::size_t(L + 1) * t_count, -1);
  const int r = tp_rank, cl = c_local;
  auto whole = [&](FullTensor w, int layer, std::int64_t count) {
    return std::vector<std::pair<std::int64_t, std::int64_t>>{{full.at(w, layer, L), count}};
  };
  if (has_embed || has_head) add_tensor(t_wte, -1, whole(t_wte, -1, full.size[t_wte]), true);
  if (has_embed) add_tensor(t_wpe, -1, whole(t_wpe, -1, full.size[t_wpe]), true);
  for (int l = 0; l < L; ++l) {
    const int attn = first_block_of_layer(l), mlp = attn + 1;
    if (attn >= blocks.begin && attn < blocks.end) {
      add_tensor(t_ln1w, l, whole(t_ln1w, l, C), false);
      add_tensor(t_ln1b, l, whole(t_ln1b, l, C), false);
      std::vector<std::pair<std::int64_t, std::int64_t>> w, bias, proj;
      for (int s = 0; s < 3; ++s) {  // this rank's heads in each of the q, k, v row sections
        w.push_back({full.at(t_qkvw, l, L) + std::int64_t(s * C + r * cl) * C, std::int64_t(cl) * C});
        bias.push_back({full.at(t_qkvb, l, L) + s * C + r * cl, cl});
      }
      for (int o = 0; o < C; ++o)  // the same heads' input columns of every output row
        proj.push_back({full.at(t_attprojw, l, L) + std::int64_t(o) * C + r * cl, cl});
      add_tensor(t_qkvw, l, w, true);
      add_tensor(t_qkvb, l, bias, false);
      add_tensor(t_attprojw, l, proj, true);
      add_tensor(t_attprojb, l, whole(t_attprojb, l, C), false);
    }
    if (mlp >= blocks.begin && mlp < blocks.end) {
      const std::int64_t hl = 4 * cl;  // hidden units per rank
      add_tensor(t_ln2w, l, whole(t_ln2w, l, C), false);
      add_tensor(t_ln2b, l, whole(t_ln2b, l, C), false);
      add_tensor(t_fcw, l, {{full.at(t_fcw, l, L) + r * hl * C, hl * C}}, true);
      add_tensor(t_fcb, l, {{full.at(t_fcb, l, L) + r * hl, hl}}, false);
      std::vector<std::pair<std::int64_t, std::int64_t>> proj;
      for (int o = 0; o < C; ++o) proj.push_back({full.at(t_fcprojw, l, L) + std::int64_t(o) * 4 * C + r * hl, hl});
      add_tensor(t_fcprojw, l, proj, true);
      add_tensor(t_fcprojb, l, whole(t_fcprojb, l, C), false);
    }
  }
  if (has_head) {
    add_tensor(t_lnfw, -1, whole(t_lnfw, -1, C), false);
    add_tensor(t_lnfb, -1, whole(t_lnfb, -1, C), false);
  }
  grads.assign(params.size(), 0.0f);
}

void Gpt2Stage::Impl::attn_branch(int block, int l, int mb) {
  Activations& a = act(block, mb);
  const float* x = block_input(block, mb);
  float* ln = sized(a.ln, std::int64_t(n) * C);
  kernels::layernorm_forward(ln, sized(a.mean, n), sized(a.rstd, n), x, P(t_ln1w, l), P(t_ln1b, l),
                             n, C);
  float* qkv = sized(a.qkv, std::int64_t(n) * 3 * c_local);
  kernels::linear_forward(qkv, ln, P(t_qkvw, l), P(t_qkvb, l), n, C, 3 * c_local);
  kernels::attention_forward(sized(a.y, std::int64_t(n) * c_local),
                             sized(a.att, std::int64_t(b) * nh_local * t * t), qkv, b, t, nh_local, hd);
}

void Gpt2Stage::Impl::mlp_branch(int block, int l, int mb) {
  Activations& a = act(block, mb);
  const float* x = block_input(block, mb);
  float* ln = sized(a.ln, std::int64_t(n) * C);
  kernels::layernorm_forward(ln, sized(a.mean, n), sized(a.rstd, n), x, P(t_ln2w, l), P(t_ln2b, l),
                             n, C);
  const std::int64_t hsize = std::int64_t(n) * 4 * c_local;
  float* h = sized(a.h, hsize);
  kernels::linear_forward(h, ln, P(t_fcw, l), P(t_fcb, l), n, C, 4 * c_local);
  kernels::gelu_forward(sized(a.g, hsize), h, hsize);
}

void Gpt2Stage::Impl::head_forward(int block, int mb) {
  if (std::int64_t(targets[mb].size()) != n)
    fail("Gpt2Stage::forward: the head needs targets of microbatch {} (set_targets)", mb);
  Activations& a = act(block, mb);
  const float* x = block_input(block, mb);
  float* ln = sized(a.ln, std::int64_t(n) * C);
  kernels::layernorm_forward(ln, sized(a.mean, n), sized(a.rstd, n), x, P(t_lnfw), P(t_lnfb), n, C);
  float* logits = sized(a.logits, std::int64_t(n) * Vp);
  kernels::linear_forward(logits, ln, P(t_wte), nullptr, n, C, Vp);
  losses[mb] = kernels::crossentropy_forward(sized(a.lse, n), logits, targets[mb].data(), n, V, Vp);
}

void Gpt2Stage::Impl::finish_forward(int block, int mb) {
  const Block kind = block_at(m, block);
  const float* bias = kind.kind == BlockKind::attn ? P(t_attprojb, kind.layer) : P(t_fcprojb, kind.layer);
  kernels::residual_add(block_output(block, mb), block_input(block, mb), partial_of(block, mb), bias,
                        n, C);
}

void Gpt2Stage::Impl::finish_backward(int block, int mb) {
  const Block kind = block_at(m, block);
  const bool attn = kind.kind == BlockKind::attn;
  Activations& a = act(block, mb);
  const int l = kind.layer;
  kernels::layernorm_backward(dres(mb), attn ? G(t_ln1w, l) : G(t_ln2w, l),
                              attn ? G(t_ln1b, l) : G(t_ln2b, l), partial_of(block, mb),
                              block_input(block, mb), attn ? P(t_ln1w, l) : P(t_ln2w, l),
                              a.mean.data(), a.rstd.data(), n, C);
  backward_done(block, mb);
}

void Gpt2Stage::Impl::backward_done(int block, int mb) {
  if (block == blocks.begin && block != 0) {
    const float* g = dres(mb);
    std::copy(g, g + std::int64_t(n) * C, sized(input_grad[mb], std::int64_t(n) * C));
  }
}

Gpt2Stage::Gpt2Stage(const ModelSpec& m, BlockRange blocks, int tp, int tp_rank, int b, int t,
                     int max_microbatches)
    : impl_(nullptr) {
  validate(m);
  const int total_blocks = block_count(m);
  if (blocks.begin < 0 || blocks.end > total_blocks || blocks.begin >= blocks.end)
    fail("Gpt2Stage: blocks [{}, {}) must be a non-empty range within [0, {}) of {}", blocks.begin,
         blocks.end, total_blocks, m.name);
  if (tp < 1 || m.n_head % tp != 0)
    fail("Gpt2Stage: tp={} must be positive and divide the {} heads of {}", tp, m.n_head, m.name);
  if (tp_rank < 0 || tp_rank >= tp) fail("Gpt2Stage: tp_rank={} must be in [0, tp={})", tp_rank, tp);
  if (b < 1 || t < 1 || t > m.n_ctx)
    fail("Gpt2Stage: b={} must be positive and t={} in [1, {}] (the context of {})", b, t, m.n_ctx,
         m.name);
  if (max_microbatches < 1)
    fail("Gpt2Stage: max_microbatches={} must be at least 1", max_microbatches);
  auto impl = std::make_unique<Impl>();
  Impl& s = *impl;
  s.m = m;
  s.blocks = blocks;
  s.tp = tp;
  s.tp_rank = tp_rank;
  s.b = b;
  s.t = t;
  s.n = b * t;
  s.slots = max_microbatches;
  s.L = m.n_layer;
  s.C = m.n_embd;
  s.hd = m.head_dim();
  s.nh_local = m.n_head / tp;
  s.c_local = s.nh_local * s.hd;
  s.V = m.vocab_size;
  s.Vp = m.padded_vocab();
  s.has_embed = blocks.begin == 0;
  s.has_head = blocks.end == total_blocks;
  s.build_layout();
  const int held = s.blocks_held();
  s.tokens.resize(s.slots);
  s.targets.resize(s.slots);
  s.input.resize(s.slots);
  s.input_grad.resize(s.slots);
  s.output_grad.resize(s.slots);
  s.residual_grad.resize(s.slots);
  s.block_out.assign(s.slots, std::vector<std::vector<float>>(held));
  s.partial.assign(s.slots, std::vector<std::vector<float>>(held));
  s.forwarded.assign(s.slots, std::vector<char>(held, 0));
  s.losses.assign(s.slots, 0.0f);
  s.acts.assign(s.slots, std::vector<Activations>(held));
  impl_ = impl.release();
}

Gpt2Stage::~Gpt2Stage() { delete impl_; }

std::span<float> Gpt2Stage::params() { return impl_->params; }
std::span<float> Gpt2Stage::grads() { return impl_->grads; }
const std::vector<ParamRun>& Gpt2Stage::param_runs() const { return impl_->runs; }

void Gpt2Stage::load_full(std::span<const float> full) {
  const std::int64_t expected = full_parameter_count(impl_->m);
  if (std::int64_t(full.size()) != expected)
    fail("Gpt2Stage::load_full: {} floats given, {} needs {} (llm.c layout with Vp={})", full.size(),
         impl_->m.name, expected, impl_->Vp);
  for (const ParamRun& run : impl_->runs)
    std::copy_n(full.begin() + run.full_offset, run.count, impl_->params.begin() + run.local_offset);
}

void Gpt2Stage::zero_grads() { std::fill(impl_->grads.begin(), impl_->grads.end(), 0.0f); }

void Gpt2Stage::set_recompute(bool on) {
  impl_->keep_activations = !on;
  impl_->acts.assign(on ? 1 : impl_->slots, std::vector<Activations>(impl_->blocks_held()));
}

static void set_ids(std::vector<int>& dst, std::span<const int> ids, int n, int vocab, int mb,
                    const char* what) {
  if (std::int64_t(ids.size()) != n)
    fail("Gpt2Stage::{}: microbatch {} has {} ids, b*t = {} expected", what, mb, ids.size(), n);
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= vocab)
      fail("Gpt2Stage::{}: id {} at position {} of microbatch {} is outside the vocabulary [0, {})",
           what, ids[i], i, mb, vocab);
  dst.assign(ids.begin(), ids.end());
}

void Gpt2Stage::set_tokens(int mb, std::span<const int> tokens) {
  impl_->check_mb(mb, "set_tokens");
  set_ids(impl_->tokens[mb], tokens, impl_->n, impl_->V, mb, "set_tokens");
}

void Gpt2Stage::set_targets(int mb, std::span<const int> targets) {
  impl_->check_mb(mb, "set_targets");
  set_ids(impl_->targets[mb], targets, impl_->n, impl_->V, mb, "set_targets");
}

std::span<float> Gpt2Stage::input(int mb) {
  impl_->check_mb(mb, "input");
  return {sized(impl_->input[mb], std::int64_t(impl_->n) * impl_->C), std::size_t(impl_->n) * impl_->C};
}

std::span<float> Gpt2Stage::output(int mb) {
  impl_->check_mb(mb, "output");
  if (impl_->has_head) return {};  // the last stage ends in the loss
  return {impl_->block_output(impl_->blocks.end - 1, mb), std::size_t(impl_->n) * impl_->C};
}

std::span<float> Gpt2Stage::output_grad(int mb) {
  impl_->check_mb(mb, "output_grad");
  if (impl_->has_head) return {};
  return {sized(impl_->output_grad[mb], std::int64_t(impl_->n) * impl_->C),
          std::size_t(impl_->n) * impl_->C};
}

std::span<float> Gpt2Stage::input_grad(int mb) {
  impl_->check_mb(mb, "input_grad");
  return {sized(impl_->input_grad[mb], std::int64_t(impl_->n) * impl_->C),
          std::size_t(impl_->n) * impl_->C};
}

void Gpt2Stage::forward(int block, int mb) {
  Impl& s = *impl_;
  s.check(block, mb, "forward");
  const Block kind = block_at(s.m, block);
  switch (kind.kind) {
    case BlockKind::embed:
      if (std::int64_t(s.tokens[mb].size()) != s.n)
        fail("Gpt2Stage::forward: the embedding needs tokens of microbatch {} (set_tokens)", mb);
      kernels::embedding_forward(s.block_output(block, mb), s.tokens[mb].data(), s.P(t_wte), s.P(t_wpe),
                                 s.n, s.t, s.C);
      break;
    case BlockKind::attn:
      s.attn_branch(block, kind.layer, mb);
      kernels::linear_forward(s.partial_of(block, mb), s.act(block, mb).y.data(),
                              s.P(t_attprojw, kind.layer), nullptr, s.n, s.c_local, s.C);
      if (s.tp == 1) s.finish_forward(block, mb);
      break;
    case BlockKind::mlp:
      s.mlp_branch(block, kind.layer, mb);
      kernels::linear_forward(s.partial_of(block, mb), s.act(block, mb).g.data(),
                              s.P(t_fcprojw, kind.layer), nullptr, s.n, 4 * s.c_local, s.C);
      if (s.tp == 1) s.finish_forward(block, mb);
      break;
    case BlockKind::head:
      s.head_forward(block, mb);
      break;
  }
  s.forwarded[mb][block - s.blocks.begin] = 1;
}

void Gpt2Stage::Impl::require_split_block(int block, const char* what) const {
  const BlockKind kind = block_at(m, block).kind;
  if (tp == 1 || kind == BlockKind::embed || kind == BlockKind::head)
    fail("Gpt2Stage::{}: block {} ({}) has no tensor-parallel partial with tp={} (only attn/mlp "
         "blocks with tp > 1 do)",
         what, block, to_string(kind), tp);
}

std::span<float> Gpt2Stage::tp_partial(int block, int mb) {
  impl_->check(block, mb, "tp_partial");
  impl_->require_split_block(block, "tp_partial");
  return {impl_->partial_of(block, mb), std::size_t(impl_->n) * impl_->C};
}

void Gpt2Stage::finish_forward(int block, int mb) {
  impl_->check(block, mb, "finish_forward");
  impl_->require_split_block(block, "finish_forward");
  impl_->finish_forward(block, mb);
}

void Gpt2Stage::backward(int block, int mb, bool recompute) {
  Impl& s = *impl_;
  s.check(block, mb, "backward");
  if (!s.forwarded[mb][block - s.blocks.begin])
    fail("Gpt2Stage::backward: block {} of microbatch {} has no forward to go back through", block, mb);
  if (!s.keep_activations && !recompute)
    fail("Gpt2Stage::backward: block {} needs recompute=true (set_recompute keeps no activations)",
         block);
  const Block kind = block_at(s.m, block);
  const int l = kind.layer;
  const std::int64_t nc = std::int64_t(s.n) * s.C;
  if (block == s.blocks.end - 1 && kind.kind != BlockKind::head) {
    if (std::int64_t(s.output_grad[mb].size()) != nc)
      fail("Gpt2Stage::backward: write output_grad({}) before the backward of block {}", mb, block);
    std::copy_n(s.output_grad[mb].begin(), nc, s.dres(mb));
  }
  float* dres = s.dres(mb);
  Activations& a = s.act(block, mb);
  switch (kind.kind) {
    case BlockKind::embed:
      kernels::embedding_backward(s.G(t_wte), s.G(t_wpe), dres, s.tokens[mb].data(), s.n, s.t, s.C);
      break;
    case BlockKind::attn: {
      if (recompute) s.attn_branch(block, l, mb);
      float* dy = scratch(s.scratch_a, std::int64_t(s.n) * s.c_local);
      float* dqkv = scratch(s.scratch_b, std::int64_t(s.n) * 3 * s.c_local);
      kernels::linear_backward(dy, s.G(t_attprojw, l), s.G(t_attprojb, l), dres, a.y.data(),
                               s.P(t_attprojw, l), s.n, s.c_local, s.C);
      kernels::attention_backward(dqkv, dy, a.att.data(), a.qkv.data(), s.b, s.t, s.nh_local, s.hd);
      kernels::linear_backward(s.partial_of(block, mb), s.G(t_qkvw, l), s.G(t_qkvb, l), dqkv,
                               a.ln.data(), s.P(t_qkvw, l), s.n, s.C, 3 * s.c_local);
      if (s.tp == 1) s.finish_backward(block, mb);
      return;
    }
    case BlockKind::mlp: {
      if (recompute) s.mlp_branch(block, l, mb);
      const std::int64_t hsize = std::int64_t(s.n) * 4 * s.c_local;
      float* dg = scratch(s.scratch_a, hsize);
      kernels::linear_backward(dg, s.G(t_fcprojw, l), s.G(t_fcprojb, l), dres, a.g.data(),
                               s.P(t_fcprojw, l), s.n, 4 * s.c_local, s.C);
      kernels::gelu_backward(dg, a.h.data(), dg, hsize);
      kernels::linear_backward(s.partial_of(block, mb), s.G(t_fcw, l), s.G(t_fcb, l), dg,
                               a.ln.data(), s.P(t_fcw, l), s.n, s.C, 4 * s.c_local);
      if (s.tp == 1) s.finish_backward(block, mb);
      return;
    }
    case BlockKind::head: {
      if (recompute) s.head_forward(block, mb);
      kernels::crossentropy_backward(a.logits.data(), a.lse.data(), s.targets[mb].data(), s.n, s.V,
                                     s.Vp);
      float* dln = scratch(s.scratch_a, nc);
      kernels::linear_backward(dln, s.G(t_wte), nullptr, a.logits.data(), a.ln.data(), s.P(t_wte),
                               s.n, s.C, s.Vp);
      std::fill_n(dres, nc, 0.0f);
      kernels::layernorm_backward(dres, s.G(t_lnfw), s.G(t_lnfb), dln, s.block_input(block, mb),
                                  s.P(t_lnfw), a.mean.data(), a.rstd.data(), s.n, s.C);
      break;
    }
  }
  s.backward_done(block, mb);
}

void Gpt2Stage::finish_backward(int block, int mb) {
  impl_->check(block, mb, "finish_backward");
  impl_->require_split_block(block, "finish_backward");
  impl_->finish_backward(block, mb);
}

float Gpt2Stage::loss(int mb) const {
  impl_->check_mb(mb, "loss");
  if (!impl_->has_head) fail("Gpt2Stage::loss: this stage does not hold the head");
  return impl_->losses[mb];
}

std::span<const float> Gpt2Stage::logits(int mb) const {
  impl_->check_mb(mb, "logits");
  if (!impl_->has_head) fail("Gpt2Stage::logits: this stage does not hold the head");
  return impl_->acts[impl_->keep_activations ? mb : 0][impl_->blocks_held() - 1].logits;
}

void Gpt2Stage::release(int mb) {
  impl_->check_mb(mb, "release");
  // The slot's buffers stay allocated for the next microbatch using it; its forward is forgotten.
  std::fill(impl_->forwarded[mb].begin(), impl_->forwarded[mb].end(), 0);
}

}  // namespace fabtrain
