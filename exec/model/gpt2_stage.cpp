// Gpt2Stage (see gpt2_stage.hpp): one rank's blocks of GPT-2 over a backend's operations. Holds
// the rank's parameter shards contiguously in params()/grads(), the per-microbatch residual
// streams between blocks, each block's saved activations, and runs each block as the same
// sequence of Gpt2Ops calls on every backend. Host copies exist only where the backend's memory
// is not the host's (Mirror below). Not here: communication (the caller sums tp_partial() and
// moves input/output between stages), the optimizer, data loading, the kernels.
#include "exec/model/gpt2_stage.hpp"

#include <algorithm>
#include <cmath>
#include <memory>

#include "common/error.hpp"
#include "exec/model/cpu_ops.hpp"
#include "exec/model/kernels_layout.hpp"

namespace fabtrain {

namespace {

// One block's activations kept from forward for backward (the fields its kind uses).
struct Activations {
  Buffer ln, mean, rstd;  // the block's LayerNorm output and statistics
  Buffer qkv, att, y;     // attention: (n, 3C/tp), (b, NH/tp, t, t), (n, C/tp)
  Buffer h, g;            // MLP: fc output before and after GELU, (n, 4C/tp)
  Buffer logits, lse;     // head: (n, Vp) and per-row log-sum-exp
};

}  // namespace

struct Gpt2Stage::Impl {
  std::unique_ptr<Gpt2Ops> owned_ops;  // first: destroyed after every buffer
  Gpt2Ops* ops = nullptr;
  bool host = true;  // the backend's memory is the host's: no host copies
  ModelSpec m;
  BlockRange blocks;
  int tp = 1, tp_rank = 0, b = 0, t = 0, n = 0, slots = 0;
  int L = 0, C = 0, hd = 0, nh_local = 0, c_local = 0, V = 0, Vp = 0;
  bool has_embed = false, has_head = false;
  bool keep_activations = true;  // false: one shared activation slot, backward must recompute
  float loss_scale = 1.0f;       // the loss's gradient is multiplied by it (set_loss_scale)

  std::int64_t param_count = 0;
  Buffer params, grads;
  std::vector<float> params_copy, grads_copy;
  bool params_on_host_newer = true;     // host params written since the last upload
  bool grads_on_host = false;           // grads() handed the host copy out: it is the newer one
  bool params_on_device_newer = false;  // the device optimizer changed them since the download
  // The device optimizer's state: AdamW's moments and the masks as 0/1 floats, each uploaded
  // again only when the host mask given is another one.
  Buffer adam_m, adam_v;
  struct Mask {
    Buffer values;
    const unsigned char* source = nullptr;
  } counted_mask, decay_mask;
  std::vector<ParamRun> runs;
  std::vector<std::int64_t> local_offset;  // [(layer + 1) * t_count + tensor], -1 when absent

  // Per microbatch.
  std::vector<std::unique_ptr<Ids>> tokens, targets;
  std::vector<char> tokens_set, targets_set, input_written, output_grad_written;
  std::vector<Buffer> input, residual_grad;
  std::vector<Buffer> row_loss;  // the head's per-row losses (kept per microbatch, not per slot)
  std::vector<std::vector<float>> input_copy, output_copy, output_grad_copy, input_grad_copy;
  std::vector<std::vector<Buffer>> block_out, partial;        // [mb][block - begin]
  std::vector<std::vector<std::vector<float>>> partial_copy;  // [mb][block - begin]
  std::vector<std::vector<char>> partial_on_host, forwarded;  // [mb][block - begin]
  std::vector<std::vector<Activations>> acts;                 // [slot][block - begin]
  std::vector<float> losses, rows_copy, logits_copy;
  std::vector<char> loss_known;
  // Backward scratch shared by all blocks (backward calls run one at a time).
  Buffer scratch_a, scratch_b;

  int blocks_held() const { return blocks.end - blocks.begin; }
  std::int64_t nc() const { return std::int64_t(n) * C; }
  std::int64_t off(FullTensor w, int layer) const {
    return local_offset[std::size_t(layer + 1) * t_count + w];
  }
  float* P(FullTensor w, int layer = -1) { return params.data() + off(w, layer); }
  float* G(FullTensor w, int layer = -1) { return grads.data() + off(w, layer); }

  // The host side of a buffer of count floats: the buffer itself where the backend's memory is
  // the host's, else its host copy (moved by upload/download where the stage says).
  std::span<float> mirror(Buffer& buffer, std::vector<float>& copy, std::int64_t count) {
    float* data = buffer.sized(*ops, count);
    if (host) return {data, std::size_t(count)};
    if (std::int64_t(copy.size()) != count) copy.assign(std::size_t(count), 0.0f);
    return copy;
  }
  // Brings the backend's copies up to date before work that reads them.
  void device_params() {
    if (!params_on_host_newer) return;
    ops->upload(params.data(), mirror(params, params_copy, param_count).data(), param_count);
    params_on_host_newer = false;
  }
  void device_grads() {
    if (!grads_on_host) return;
    ops->upload(grads.data(), mirror(grads, grads_copy, param_count).data(), param_count);
    grads_on_host = false;
  }

  const float* device_mask(Mask& mask, std::span<const unsigned char> host_mask) {
    if (std::int64_t(host_mask.size()) != param_count)
      fail("Gpt2Stage: a mask of {} entries for {} parameters", host_mask.size(), param_count);
    if (mask.source != host_mask.data()) {
      const std::vector<float> values(host_mask.begin(), host_mask.end());
      ops->upload(mask.values.sized(*ops, param_count), values.data(), param_count);
      ops->synchronize();  // values goes out of scope
      mask.source = host_mask.data();
    }
    return mask.values.data();
  }
  void ensure_adam_state() {
    if (adam_m.size() == param_count) return;
    ops->zero(adam_m.sized(*ops, param_count), param_count);
    ops->zero(adam_v.sized(*ops, param_count), param_count);
  }

  void check(int block, int mb, const char* what) const {
    if (block < blocks.begin || block >= blocks.end)
      fail("Gpt2Stage::{}: block {} is not in this stage's blocks [{}, {})", what, block,
           blocks.begin, blocks.end);
    check_mb(mb, what);
  }
  void check_mb(int mb, const char* what) const {
    if (mb < 0 || mb >= slots)
      fail("Gpt2Stage::{}: microbatch {} is outside the {} activation slots", what, mb, slots);
  }
  void require_split_block(int block, const char* what) const;

  Activations& act(int block, int mb) {
    return acts[keep_activations ? mb : 0][block - blocks.begin];
  }
  Activations& head_act(int mb) { return acts[keep_activations ? mb : 0][blocks_held() - 1]; }
  float* block_input(int block, int mb) {
    if (block != blocks.begin) return block_out[mb][block - 1 - blocks.begin].data();
    float* x = input[mb].sized(*ops, nc());
    if (input_written[mb]) {
      ops->upload(x, mirror(input[mb], input_copy[mb], nc()).data(), nc());
      input_written[mb] = 0;
    }
    return x;
  }
  float* block_output(int block, int mb) {
    return block_out[mb][block - blocks.begin].sized(*ops, nc());
  }
  float* partial_of(int block, int mb) {
    const int k = block - blocks.begin;
    float* p = partial[mb][k].sized(*ops, nc());
    if (partial_on_host[mb][k]) {  // the caller summed it on the host
      ops->upload(p, mirror(partial[mb][k], partial_copy[mb][k], nc()).data(), nc());
      partial_on_host[mb][k] = 0;
    }
    return p;
  }
  float* dres(int mb) { return residual_grad[mb].sized(*ops, nc()); }
  // data *= factor where the backend keeps it (the host's loop on the CPU).
  void scale_in_place(float* data, std::int64_t count, float factor) {
    if (!host) {
      ops->scale(data, count, factor);
      return;
    }
    for (std::int64_t i = 0; i < count; ++i) data[i] *= factor;
  }

  void build_layout();
  void add_tensor(FullTensor w, int layer,
                  const std::vector<std::pair<std::int64_t, std::int64_t>>& pieces, bool decay);
  void allocate();

  // Forward up to (not including) the output projection; the head's forward entirely.
  void attn_branch(int block, int layer, int mb);
  void mlp_branch(int block, int layer, int mb);
  void head_forward(int block, int mb);
  void finish_forward(int block, int mb);
  void finish_backward(int block, int mb);
  void attn_backward(int block, int layer, int mb, bool recompute);
  void mlp_backward(int block, int layer, int mb, bool recompute);
  void head_backward(int block, int mb, bool recompute);
};

void Gpt2Stage::Impl::add_tensor(FullTensor w, int layer,
                                 const std::vector<std::pair<std::int64_t, std::int64_t>>& pieces,
                                 bool decay) {
  std::int64_t local = param_count;
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
  param_count = local;
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
        w.push_back(
            {full.at(t_qkvw, l, L) + std::int64_t(s * C + r * cl) * C, std::int64_t(cl) * C});
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
      for (int o = 0; o < C; ++o)
        proj.push_back({full.at(t_fcprojw, l, L) + std::int64_t(o) * 4 * C + r * hl, hl});
      add_tensor(t_fcprojw, l, proj, true);
      add_tensor(t_fcprojb, l, whole(t_fcprojb, l, C), false);
    }
  }
  if (has_head) {
    add_tensor(t_lnfw, -1, whole(t_lnfw, -1, C), false);
    add_tensor(t_lnfb, -1, whole(t_lnfb, -1, C), false);
  }
}

void Gpt2Stage::Impl::allocate() {
  params.sized(*ops, param_count);
  (void)mirror(params, params_copy, param_count);
  grads.sized(*ops, param_count);
  ops->zero(grads.data(), param_count);
  const int held = blocks_held();
  for (int mb = 0; mb < slots; ++mb) {
    tokens.push_back(ops->make_ids());
    targets.push_back(ops->make_ids());
  }
  tokens_set.assign(slots, 0);
  targets_set.assign(slots, 0);
  input_written.assign(slots, 0);
  output_grad_written.assign(slots, 0);
  input.resize(slots);
  residual_grad.resize(slots);
  row_loss.resize(slots);
  input_copy.resize(slots);
  output_copy.resize(slots);
  output_grad_copy.resize(slots);
  input_grad_copy.resize(slots);
  block_out.resize(slots);
  partial.resize(slots);
  for (int mb = 0; mb < slots; ++mb) {
    block_out[mb].resize(held);
    partial[mb].resize(held);
  }
  partial_copy.assign(slots, std::vector<std::vector<float>>(held));
  partial_on_host.assign(slots, std::vector<char>(held, 0));
  forwarded.assign(slots, std::vector<char>(held, 0));
  acts.resize(slots);
  for (auto& slot : acts) slot.resize(held);
  losses.assign(slots, 0.0f);
  loss_known.assign(slots, 0);
}

void Gpt2Stage::Impl::attn_branch(int block, int l, int mb) {
  Activations& a = act(block, mb);
  const float* x = block_input(block, mb);
  float* ln = a.ln.sized(*ops, nc());
  ops->layernorm_forward(ln, a.mean.sized(*ops, n), a.rstd.sized(*ops, n), x, P(t_ln1w, l),
                         P(t_ln1b, l), n, C);
  float* qkv = a.qkv.sized(*ops, std::int64_t(n) * 3 * c_local);
  ops->linear_forward(qkv, ln, P(t_qkvw, l), P(t_qkvb, l), n, C, 3 * c_local);
  ops->attention_forward(a.y.sized(*ops, std::int64_t(n) * c_local),
                         a.att.sized(*ops, std::int64_t(b) * nh_local * t * t), qkv, b, t, nh_local,
                         hd);
}

void Gpt2Stage::Impl::mlp_branch(int block, int l, int mb) {
  Activations& a = act(block, mb);
  const float* x = block_input(block, mb);
  float* ln = a.ln.sized(*ops, nc());
  ops->layernorm_forward(ln, a.mean.sized(*ops, n), a.rstd.sized(*ops, n), x, P(t_ln2w, l),
                         P(t_ln2b, l), n, C);
  const std::int64_t hsize = std::int64_t(n) * 4 * c_local;
  float* h = a.h.sized(*ops, hsize);
  ops->linear_forward(h, ln, P(t_fcw, l), P(t_fcb, l), n, C, 4 * c_local);
  ops->gelu_forward(a.g.sized(*ops, hsize), h, hsize);
}

void Gpt2Stage::Impl::head_forward(int block, int mb) {
  if (!targets_set[mb])
    fail("Gpt2Stage::forward: the head needs targets of microbatch {} (set_targets)", mb);
  Activations& a = act(block, mb);
  const float* x = block_input(block, mb);
  float* ln = a.ln.sized(*ops, nc());
  ops->layernorm_forward(ln, a.mean.sized(*ops, n), a.rstd.sized(*ops, n), x, P(t_lnfw), P(t_lnfb),
                         n, C);
  float* logits = a.logits.sized(*ops, std::int64_t(n) * Vp);
  ops->linear_forward(logits, ln, P(t_wte), nullptr, n, C, Vp);
  ops->crossentropy_forward(a.lse.sized(*ops, n), row_loss[mb].sized(*ops, n), logits, *targets[mb],
                            n, V, Vp);
  loss_known[mb] = 0;
}

void Gpt2Stage::Impl::finish_forward(int block, int mb) {
  const Block kind = block_at(m, block);
  const float* bias =
      kind.kind == BlockKind::attn ? P(t_attprojb, kind.layer) : P(t_fcprojb, kind.layer);
  const float* sum = partial_of(block, mb);
  ops->residual_add(block_output(block, mb), block_input(block, mb), sum, bias, n, C);
}

void Gpt2Stage::Impl::finish_backward(int block, int mb) {
  device_params();
  device_grads();
  const Block kind = block_at(m, block);
  const bool attn = kind.kind == BlockKind::attn;
  const int l = kind.layer;
  Activations& a = act(block, mb);
  const float* sum = partial_of(block, mb);
  ops->layernorm_backward(dres(mb), attn ? G(t_ln1w, l) : G(t_ln2w, l),
                          attn ? G(t_ln1b, l) : G(t_ln2b, l), sum, block_input(block, mb),
                          attn ? P(t_ln1w, l) : P(t_ln2w, l), a.mean.data(), a.rstd.data(), n, C);
}

void Gpt2Stage::Impl::attn_backward(int block, int l, int mb, bool recompute) {
  if (recompute) attn_branch(block, l, mb);
  Activations& a = act(block, mb);
  // dy is sized for the MLP's dg too, so the two blocks share one allocation.
  float* dy = scratch_a.grown(*ops, std::int64_t(n) * 4 * c_local);
  float* dqkv = scratch_b.grown(*ops, std::int64_t(n) * 3 * c_local);
  ops->linear_backward(dy, G(t_attprojw, l), G(t_attprojb, l), dres(mb), a.y.data(),
                       P(t_attprojw, l), n, c_local, C);
  ops->attention_backward(dqkv, dy, a.att.data(), a.qkv.data(), b, t, nh_local, hd);
  partial_on_host[mb][block - blocks.begin] = 0;
  ops->linear_backward(partial_of(block, mb), G(t_qkvw, l), G(t_qkvb, l), dqkv, a.ln.data(),
                       P(t_qkvw, l), n, C, 3 * c_local);
  if (tp == 1) finish_backward(block, mb);
}

void Gpt2Stage::Impl::mlp_backward(int block, int l, int mb, bool recompute) {
  if (recompute) mlp_branch(block, l, mb);
  Activations& a = act(block, mb);
  const std::int64_t hsize = std::int64_t(n) * 4 * c_local;
  float* dg = scratch_a.grown(*ops, hsize);
  ops->linear_backward(dg, G(t_fcprojw, l), G(t_fcprojb, l), dres(mb), a.g.data(), P(t_fcprojw, l),
                       n, 4 * c_local, C);
  ops->gelu_backward(dg, a.h.data(), dg, hsize);
  partial_on_host[mb][block - blocks.begin] = 0;
  ops->linear_backward(partial_of(block, mb), G(t_fcw, l), G(t_fcb, l), dg, a.ln.data(),
                       P(t_fcw, l), n, C, 4 * c_local);
  if (tp == 1) finish_backward(block, mb);
}

void Gpt2Stage::Impl::head_backward(int block, int mb, bool recompute) {
  if (recompute) head_forward(block, mb);
  Activations& a = act(block, mb);
  ops->crossentropy_backward(a.logits.data(), a.lse.data(), *targets[mb], n, V, Vp);
  if (loss_scale != 1.0f) scale_in_place(a.logits.data(), std::int64_t(n) * Vp, loss_scale);
  float* dln = scratch_a.grown(*ops, nc());
  ops->linear_backward(dln, G(t_wte), nullptr, a.logits.data(), a.ln.data(), P(t_wte), n, C, Vp);
  float* d = dres(mb);
  ops->zero(d, nc());
  ops->layernorm_backward(d, G(t_lnfw), G(t_lnfb), dln, block_input(block, mb), P(t_lnfw),
                          a.mean.data(), a.rstd.data(), n, C);
}

void Gpt2Stage::Impl::require_split_block(int block, const char* what) const {
  const BlockKind kind = block_at(m, block).kind;
  if (tp == 1 || kind == BlockKind::embed || kind == BlockKind::head)
    fail(
        "Gpt2Stage::{}: block {} ({}) has no tensor-parallel partial with tp={} (only attn/mlp "
        "blocks with tp > 1 do)",
        what, block, to_string(kind), tp);
}

Gpt2Stage::Gpt2Stage(const ModelSpec& m, BlockRange blocks, int tp, int tp_rank, int b, int t,
                     int max_microbatches, std::unique_ptr<Gpt2Ops> ops) {
  validate(m);
  const int total_blocks = block_count(m);
  if (blocks.begin < 0 || blocks.end > total_blocks || blocks.begin >= blocks.end)
    fail("Gpt2Stage: blocks [{}, {}) must be a non-empty range within [0, {}) of {}", blocks.begin,
         blocks.end, total_blocks, m.name);
  if (tp < 1 || m.n_head % tp != 0)
    fail("Gpt2Stage: tp={} must be positive and divide the {} heads of {}", tp, m.n_head, m.name);
  if (tp_rank < 0 || tp_rank >= tp)
    fail("Gpt2Stage: tp_rank={} must be in [0, tp={})", tp_rank, tp);
  if (b < 1 || t < 1 || t > m.n_ctx)
    fail("Gpt2Stage: b={} must be positive and t={} in [1, {}] (the context of {})", b, t, m.n_ctx,
         m.name);
  if (max_microbatches < 1)
    fail("Gpt2Stage: max_microbatches={} must be at least 1", max_microbatches);
  impl_ = std::make_unique<Impl>();
  Impl& s = *impl_;
  s.owned_ops = ops ? std::move(ops) : make_cpu_ops();
  s.ops = s.owned_ops.get();
  s.host = s.ops->host_memory();
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
  s.allocate();
}

Gpt2Stage::~Gpt2Stage() = default;

std::span<float> Gpt2Stage::params() {
  // Current on the host unless the device optimizer changed them; the caller may write them.
  Impl& s = *impl_;
  const std::span<float> host = s.mirror(s.params, s.params_copy, s.param_count);
  if (s.params_on_device_newer) {
    s.ops->download(host.data(), s.params.data(), s.param_count);
    s.params_on_device_newer = false;
  }
  s.params_on_host_newer = true;
  return host;
}

std::span<float> Gpt2Stage::grads() {
  Impl& s = *impl_;
  const std::span<float> host = s.mirror(s.grads, s.grads_copy, s.param_count);
  if (!s.grads_on_host) {
    s.ops->download(host.data(), s.grads.data(), s.param_count);
    s.grads_on_host = true;
  }
  return host;
}

const std::vector<ParamRun>& Gpt2Stage::param_runs() const { return impl_->runs; }

void Gpt2Stage::load_full(std::span<const float> full) {
  const std::int64_t expected = full_parameter_count(impl_->m);
  if (std::int64_t(full.size()) != expected)
    fail("Gpt2Stage::load_full: {} floats given, {} needs {} (llm.c layout with Vp={})",
         full.size(), impl_->m.name, expected, impl_->Vp);
  const std::span<float> host = params();
  for (const ParamRun& run : impl_->runs)
    std::copy_n(full.begin() + run.full_offset, run.count, host.begin() + run.local_offset);
}

void Gpt2Stage::zero_grads() {
  impl_->ops->zero(impl_->grads.data(), impl_->param_count);
  impl_->grads_on_host = false;
}

void Gpt2Stage::set_recompute(bool on) {
  Impl& s = *impl_;
  s.keep_activations = !on;
  s.acts.clear();
  s.acts.resize(on ? 1 : s.slots);
  for (auto& slot : s.acts) slot.resize(s.blocks_held());
}

void Gpt2Stage::set_loss_scale(float scale) {
  if (!(scale > 0) || !std::isfinite(scale))
    fail("loss scale {}: must be positive and finite", scale);
  impl_->loss_scale = scale;
}

static void check_ids(std::span<const int> ids, int n, int vocab, int mb, const char* what) {
  if (std::int64_t(ids.size()) != n)
    fail("Gpt2Stage::{}: microbatch {} has {} ids, b*t = {} expected", what, mb, ids.size(), n);
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= vocab)
      fail("Gpt2Stage::{}: id {} at position {} of microbatch {} is outside the vocabulary [0, {})",
           what, ids[i], i, mb, vocab);
}

void Gpt2Stage::set_tokens(int mb, std::span<const int> tokens) {
  Impl& s = *impl_;
  s.check_mb(mb, "set_tokens");
  check_ids(tokens, s.n, s.V, mb, "set_tokens");
  s.ops->set_ids(*s.tokens[mb], tokens, true);
  s.tokens_set[mb] = 1;
}

void Gpt2Stage::set_targets(int mb, std::span<const int> targets) {
  Impl& s = *impl_;
  s.check_mb(mb, "set_targets");
  check_ids(targets, s.n, s.V, mb, "set_targets");
  s.ops->set_ids(*s.targets[mb], targets, false);
  s.targets_set[mb] = 1;
}

std::span<float> Gpt2Stage::input(int mb) {
  Impl& s = *impl_;
  s.check_mb(mb, "input");
  s.input_written[mb] = 1;
  return s.mirror(s.input[mb], s.input_copy[mb], s.nc());
}

std::span<float> Gpt2Stage::output(int mb) {
  Impl& s = *impl_;
  s.check_mb(mb, "output");
  if (s.has_head) return {};  // the last stage ends in the loss
  const int k = s.blocks_held() - 1;
  if (!s.forwarded[mb][k])
    fail("Gpt2Stage::output: microbatch {} has not gone forward through block {}", mb,
         s.blocks.end - 1);
  const std::span<float> out = s.mirror(s.block_out[mb][k], s.output_copy[mb], s.nc());
  s.ops->download(out.data(), s.block_out[mb][k].data(), s.nc());
  return out;
}

std::span<float> Gpt2Stage::output_grad(int mb) {
  Impl& s = *impl_;
  s.check_mb(mb, "output_grad");
  if (s.has_head) return {};
  s.output_grad_written[mb] = 1;
  return s.mirror(s.residual_grad[mb], s.output_grad_copy[mb], s.nc());
}

std::span<float> Gpt2Stage::input_grad(int mb) {
  Impl& s = *impl_;
  s.check_mb(mb, "input_grad");
  const bool computed = s.residual_grad[mb].size() == s.nc();
  const std::span<float> g = s.mirror(s.residual_grad[mb], s.input_grad_copy[mb], s.nc());
  if (computed) s.ops->download(g.data(), s.residual_grad[mb].data(), s.nc());
  return g;
}

void Gpt2Stage::forward(int block, int mb) {
  Impl& s = *impl_;
  s.check(block, mb, "forward");
  s.device_params();
  const Block kind = block_at(s.m, block);
  const int k = block - s.blocks.begin;
  switch (kind.kind) {
    case BlockKind::embed:
      if (!s.tokens_set[mb])
        fail("Gpt2Stage::forward: the embedding needs tokens of microbatch {} (set_tokens)", mb);
      s.ops->embedding_forward(s.block_output(block, mb), *s.tokens[mb], s.P(t_wte), s.P(t_wpe),
                               s.n, s.t, s.C);
      break;
    case BlockKind::attn:
      s.attn_branch(block, kind.layer, mb);
      s.partial_on_host[mb][k] = 0;
      s.ops->linear_forward(s.partial_of(block, mb), s.act(block, mb).y.data(),
                            s.P(t_attprojw, kind.layer), nullptr, s.n, s.c_local, s.C);
      if (s.tp == 1) s.finish_forward(block, mb);
      break;
    case BlockKind::mlp:
      s.mlp_branch(block, kind.layer, mb);
      s.partial_on_host[mb][k] = 0;
      s.ops->linear_forward(s.partial_of(block, mb), s.act(block, mb).g.data(),
                            s.P(t_fcprojw, kind.layer), nullptr, s.n, 4 * s.c_local, s.C);
      if (s.tp == 1) s.finish_forward(block, mb);
      break;
    case BlockKind::head:
      s.head_forward(block, mb);
      break;
  }
  s.forwarded[mb][k] = 1;
}

std::span<float> Gpt2Stage::tp_partial(int block, int mb) {
  Impl& s = *impl_;
  s.check(block, mb, "tp_partial");
  s.require_split_block(block, "tp_partial");
  const int k = block - s.blocks.begin;
  const std::span<float> host = s.mirror(s.partial[mb][k], s.partial_copy[mb][k], s.nc());
  if (!s.partial_on_host[mb][k]) {
    s.ops->download(host.data(), s.partial[mb][k].data(), s.nc());
    s.partial_on_host[mb][k] = 1;  // the caller sums into it; uploaded by finish_*
  }
  return host;
}

void Gpt2Stage::finish_forward(int block, int mb) {
  impl_->check(block, mb, "finish_forward");
  impl_->require_split_block(block, "finish_forward");
  impl_->device_params();
  impl_->finish_forward(block, mb);
}

void Gpt2Stage::backward(int block, int mb, bool recompute) {
  Impl& s = *impl_;
  s.check(block, mb, "backward");
  if (!s.forwarded[mb][block - s.blocks.begin])
    fail("Gpt2Stage::backward: block {} of microbatch {} has no forward to go back through", block,
         mb);
  if (!s.keep_activations && !recompute)
    fail("Gpt2Stage::backward: block {} needs recompute=true (set_recompute keeps no activations)",
         block);
  s.device_params();
  s.device_grads();
  const Block kind = block_at(s.m, block);
  if (block == s.blocks.end - 1 && kind.kind != BlockKind::head) {
    if (!s.output_grad_written[mb])
      fail("Gpt2Stage::backward: write output_grad({}) before the backward of block {}", mb, block);
    s.ops->upload(s.dres(mb), s.mirror(s.residual_grad[mb], s.output_grad_copy[mb], s.nc()).data(),
                  s.nc());
    s.output_grad_written[mb] = 0;
  }
  switch (kind.kind) {
    case BlockKind::embed:
      s.ops->embedding_backward(s.G(t_wte), s.G(t_wpe), s.dres(mb), *s.tokens[mb], s.n, s.t, s.C);
      break;
    case BlockKind::attn:
      s.attn_backward(block, kind.layer, mb, recompute);
      break;
    case BlockKind::mlp:
      s.mlp_backward(block, kind.layer, mb, recompute);
      break;
    case BlockKind::head:
      s.head_backward(block, mb, recompute);
      break;
  }
}

void Gpt2Stage::finish_backward(int block, int mb) {
  impl_->check(block, mb, "finish_backward");
  impl_->require_split_block(block, "finish_backward");
  impl_->finish_backward(block, mb);
}

float Gpt2Stage::loss(int mb) const {
  Impl& s = *impl_;
  s.check_mb(mb, "loss");
  if (!s.has_head) fail("Gpt2Stage::loss: this stage does not hold the head");
  if (!s.loss_known[mb]) {
    // Summed on the host in row order in double: the same bits each run, on every backend.
    Buffer& row_loss = s.row_loss[mb];
    if (row_loss.size() != s.n)
      fail("Gpt2Stage::loss: microbatch {} has no forward through the head", mb);
    const std::span<float> rows = s.mirror(row_loss, s.rows_copy, s.n);
    s.ops->download(rows.data(), row_loss.data(), s.n);
    double total = 0.0;
    for (float r : rows) total += r;
    s.losses[mb] = float(total / s.n);
    s.loss_known[mb] = 1;
  }
  return s.losses[mb];
}

std::span<const float> Gpt2Stage::logits(int mb) const {
  Impl& s = *impl_;
  s.check_mb(mb, "logits");
  if (!s.has_head) fail("Gpt2Stage::logits: this stage does not hold the head");
  Activations& a = s.head_act(mb);
  const std::int64_t count = a.logits.size();
  const std::span<float> host = s.mirror(a.logits, s.logits_copy, count);
  if (count > 0) s.ops->download(host.data(), a.logits.data(), count);
  return host;
}

void Gpt2Stage::release(int mb) {
  impl_->check_mb(mb, "release");
  // The slot's buffers stay allocated for the next microbatch using it; its forward is forgotten.
  std::fill(impl_->forwarded[mb].begin(), impl_->forwarded[mb].end(), 0);
}

void Gpt2Stage::synchronize() { impl_->ops->synchronize(); }

bool Gpt2Stage::has_marks() const { return impl_->ops->has_marks(); }

void Gpt2Stage::mark(int k) { impl_->ops->mark(k); }

std::vector<double> Gpt2Stage::mark_seconds(int n) { return impl_->ops->mark_seconds(n); }

bool Gpt2Stage::device_optimizer() const { return !impl_->host && impl_->ops->runs_optimizer(); }

std::span<float> Gpt2Stage::device_grads() {
  Impl& s = *impl_;
  if (s.host) return {};
  s.device_grads();
  return {s.grads.data(), std::size_t(s.param_count)};
}

Gpt2Ops* Gpt2Stage::device_ops() { return device_optimizer() ? impl_->ops : nullptr; }

std::span<float> Gpt2Stage::device_params() {
  Impl& s = *impl_;
  if (s.host) return {};
  s.device_params();
  s.params_on_device_newer = true;  // the caller may write them
  return {s.params.data(), std::size_t(s.param_count)};
}

void Gpt2Stage::scale_grads(float factor) {
  Impl& s = *impl_;
  s.device_grads();
  s.ops->scale(s.grads.data(), s.param_count, factor);
}

double Gpt2Stage::grad_square_sum(std::span<const unsigned char> counted) {
  Impl& s = *impl_;
  s.device_grads();
  return s.ops->masked_square_sum(s.grads.data(), s.device_mask(s.counted_mask, counted),
                                  s.param_count);
}

void Gpt2Stage::adamw_step(const AdamW& adamw, std::span<const unsigned char> decay, float lr,
                           int step, float grad_scale) {
  Impl& s = *impl_;
  if (step < 1) fail("AdamW: step {} must count from 1", step);
  s.device_grads();
  s.device_params();
  s.ensure_adam_state();
  s.ops->adamw(s.params.data(), s.grads.data(), s.adam_m.data(), s.adam_v.data(),
               s.device_mask(s.decay_mask, decay), s.param_count,
               {lr, adamw.beta1, adamw.beta2, adamw.eps, adamw.weight_decay, step, grad_scale});
  s.params_on_device_newer = true;
}

void Gpt2Stage::adam_state(std::vector<float>* m, std::vector<float>* v) {
  Impl& s = *impl_;
  for (auto [host, device] : {std::pair{m, &s.adam_m}, std::pair{v, &s.adam_v}}) {
    if (!host) continue;
    host->assign(std::size_t(s.param_count), 0.0f);
    if (device->size() == s.param_count)  // else no step yet: zero
      s.ops->download(host->data(), device->data(), s.param_count);
  }
}

void Gpt2Stage::set_adam_state(std::span<const float> m, std::span<const float> v) {
  Impl& s = *impl_;
  if (std::int64_t(m.size()) != s.param_count || std::int64_t(v.size()) != s.param_count)
    fail("Gpt2Stage: AdamW state of {} and {} values for {} parameters", m.size(), v.size(),
         s.param_count);
  s.ensure_adam_state();
  s.ops->upload(s.adam_m.data(), m.data(), s.param_count);
  s.ops->upload(s.adam_v.data(), v.data(), s.param_count);
  s.ops->synchronize();  // the caller's spans may go away
}

}  // namespace fabtrain
