// CudaGpt2Stage (see cuda_gpt2_stage.hpp): GPT-2 blocks on a CUDA device. The CPU Gpt2Stage
// built with the same arguments is kept as `host`: it validates the arguments with the same
// messages, defines the parameter layout (param_runs) and holds the host mirrors of parameters,
// gradients and the transfer buffers; its own compute is never called. Each block runs the same
// sequence of operations as exec/gpt2_stage.cpp.
#include "exec/cuda/cuda_gpt2_stage.hpp"

#include <algorithm>
#include <numeric>

#include "common/error.hpp"
#include "exec/cuda/cuda_check.hpp"
#include "exec/cuda/cuda_device.hpp"
#include "exec/cuda/cuda_gemm.hpp"
#include "exec/cuda/cuda_kernels.hpp"
#include "exec/kernels_layout.hpp"

namespace fabtrain::cuda {
namespace {

// One block's activations kept from forward for backward (the fields its kind uses).
struct DeviceActivations {
  DeviceArray<float> ln, mean, rstd;  // LayerNorm output and statistics
  DeviceArray<float> qkv, att, y;     // attention: (n, 3C/tp), (b, NH/tp, t, t), (n, C/tp)
  DeviceArray<float> h, g;            // MLP: fc output before and after GELU, (n, 4C/tp)
  DeviceArray<float> logits, lse, row_loss;  // head: (n, Vp), per-row log-sum-exp and loss
};

// The embedding backward's grouping of rows by token (deterministic, in row order).
struct TokenGroups {
  DeviceArray<int> rows_by_token, group_start, group_token;
  int groups = 0;
};

}  // namespace

struct CudaGpt2Stage::Impl {
  ModelSpec m;
  BlockRange blocks;
  int tp = 1, host_tp_rank = 0, b = 0, t = 0, n = 0, slots = 0;
  int L = 0, C = 0, hd = 0, nh_local = 0, c_local = 0, V = 0, Vp = 0;
  bool has_embed = false, has_head = false, keep_activations = true;

  Gpt2Stage host;  // layout, validation and host mirrors
  cudaStream_t stream = nullptr;
  std::unique_ptr<CudaGemm> gemm;
  std::vector<std::int64_t> local_offset;  // [(layer + 1) * t_count + tensor], -1 when absent

  DeviceArray<float> params, grads;
  bool params_on_host_newer = true;  // host params written since the last upload
  bool grads_on_host = false;        // grads() handed the host copy out: it is the newer one

  // Per microbatch.
  std::vector<DeviceArray<int>> tokens, targets;
  std::vector<TokenGroups> token_groups;
  std::vector<char> tokens_set, targets_set, input_written, output_grad_written;
  std::vector<DeviceArray<float>> input, residual_grad;
  std::vector<std::vector<DeviceArray<float>>> block_out, partial;  // [mb][block - begin]
  std::vector<std::vector<char>> partial_on_host, forwarded;       // [mb][block - begin]
  std::vector<std::vector<DeviceActivations>> acts;                // [slot][block - begin]
  mutable std::vector<float> losses;
  mutable std::vector<char> loss_known;
  mutable std::vector<float> logits_host;
  // Backward scratch shared by all blocks.
  DeviceArray<float> scratch_a, scratch_b, datt, norm_scratch, column_scratch;

  Impl(const ModelSpec& model, BlockRange range, int tp_, int tp_rank, int b_, int t_, int mbs)
      : host(model, range, tp_, tp_rank, b_, t_, mbs) {}

  int held() const { return blocks.end - blocks.begin; }
  std::int64_t nc() const { return std::int64_t(n) * C; }
  std::int64_t off(FullTensor w, int layer) const {
    return local_offset[std::size_t(layer + 1) * t_count + w];
  }
  float* P(FullTensor w, int layer = -1) { return params.data() + off(w, layer); }
  float* G(FullTensor w, int layer = -1) { return grads.data() + off(w, layer); }
  void check_launch() { CUDA_CHECK(cudaGetLastError()); }

  void upload(float* dst, std::span<const float> src) {
    CUDA_CHECK(cudaMemcpyAsync(dst, src.data(), src.size() * sizeof(float), cudaMemcpyHostToDevice, stream));
  }
  void download(std::span<float> dst, const float* src) {
    CUDA_CHECK(cudaMemcpyAsync(dst.data(), src, dst.size() * sizeof(float), cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  // Brings the device copies up to date before device work that reads them.
  void device_params() {
    if (!params_on_host_newer) return;
    upload(params.data(), host.params());
    params_on_host_newer = false;
  }
  void device_grads() {
    if (!grads_on_host) return;
    upload(grads.data(), host.grads());
    grads_on_host = false;
  }

  void check(int block, int mb, const char* what) const {
    if (block < blocks.begin || block >= blocks.end)
      fail("CudaGpt2Stage::{}: block {} is not in this stage's blocks [{}, {})", what, block,
           blocks.begin, blocks.end);
    check_mb(mb, what);
  }
  void check_mb(int mb, const char* what) const {
    if (mb < 0 || mb >= slots)
      fail("CudaGpt2Stage::{}: microbatch {} is outside the {} activation slots", what, mb, slots);
  }

  DeviceActivations& act(int block, int mb) { return acts[keep_activations ? mb : 0][block - blocks.begin]; }
  float* block_input(int block, int mb) {
    if (block == blocks.begin) {
      float* x = input[mb].sized(nc());
      if (input_written[mb]) {
        upload(x, host.input(mb));
        input_written[mb] = 0;
      }
      return x;
    }
    return block_out[mb][block - 1 - blocks.begin].data();
  }
  float* block_output(int block, int mb) { return block_out[mb][block - blocks.begin].sized(nc()); }
  float* partial_of(int block, int mb) {
    float* p = partial[mb][block - blocks.begin].sized(nc());
    if (partial_on_host[mb][block - blocks.begin]) {  // the caller summed it on the host
      upload(p, host.tp_partial(block, mb));
      partial_on_host[mb][block - blocks.begin] = 0;
    }
    return p;
  }
  float* dres(int mb) { return residual_grad[mb].sized(nc()); }
  float* column_sums(int cols) { return column_scratch.sized(std::max<std::int64_t>(column_scratch.size(), column_sums_scratch(n, cols))); }

  void build_offsets();
  void attn_branch(int block, int layer, int mb);
  void mlp_branch(int block, int layer, int mb);
  void head_forward(int block, int mb);
  void finish_forward(int block, int mb);
  void finish_backward(int block, int mb);
  void layernorm_backward(float* dx, float* dw, float* db, const float* dout, const float* x,
                          const float* w, const DeviceActivations& a);
};

void CudaGpt2Stage::Impl::build_offsets() {
  // Each tensor's local offset is where its first piece lands: look its full offset up in the
  // runs of the CPU layout (the pieces of one tensor are contiguous locally).
  const FullLayout full = full_layout(m);
  const std::vector<ParamRun>& runs = host.param_runs();
  auto local_of = [&](std::int64_t full_offset) -> std::int64_t {
    for (const ParamRun& run : runs)
      if (full_offset >= run.full_offset && full_offset < run.full_offset + run.count)
        return run.local_offset + (full_offset - run.full_offset);
    fail("CudaGpt2Stage: full offset {} is in none of the stage's parameter runs", full_offset);
  };
  const int r = host_tp_rank;
  local_offset.assign(std::size_t(L + 1) * t_count, -1);
  auto set = [&](FullTensor w, int layer, std::int64_t first_piece) {
    local_offset[std::size_t(layer + 1) * t_count + w] = local_of(full.at(w, layer, L) + first_piece);
  };
  if (has_embed || has_head) set(t_wte, -1, 0);
  if (has_embed) set(t_wpe, -1, 0);
  const std::int64_t cl = c_local, hl = 4 * std::int64_t(c_local);
  for (int l = 0; l < L; ++l) {
    const int attn = first_block_of_layer(l), mlp = attn + 1;
    if (attn >= blocks.begin && attn < blocks.end) {
      set(t_ln1w, l, 0);
      set(t_ln1b, l, 0);
      set(t_qkvw, l, r * cl * C);
      set(t_qkvb, l, r * cl);
      set(t_attprojw, l, r * cl);
      set(t_attprojb, l, 0);
    }
    if (mlp >= blocks.begin && mlp < blocks.end) {
      set(t_ln2w, l, 0);
      set(t_ln2b, l, 0);
      set(t_fcw, l, r * hl * C);
      set(t_fcb, l, r * hl);
      set(t_fcprojw, l, r * hl);
      set(t_fcprojb, l, 0);
    }
  }
  if (has_head) {
    set(t_lnfw, -1, 0);
    set(t_lnfb, -1, 0);
  }
}

void CudaGpt2Stage::Impl::attn_branch(int block, int l, int mb) {
  DeviceActivations& a = act(block, mb);
  const float* x = block_input(block, mb);
  float* ln = a.ln.sized(nc());
  layernorm_forward(ln, a.mean.sized(n), a.rstd.sized(n), x, P(t_ln1w, l), P(t_ln1b, l), n, C, stream);
  check_launch();
  float* qkv = a.qkv.sized(std::int64_t(n) * 3 * c_local);
  gemm->linear_forward(qkv, ln, P(t_qkvw, l), P(t_qkvb, l), n, C, 3 * c_local);
  gemm->attention_forward(a.y.sized(std::int64_t(n) * c_local),
                          a.att.sized(std::int64_t(b) * nh_local * t * t), qkv, b, t, nh_local, hd);
}

void CudaGpt2Stage::Impl::mlp_branch(int block, int l, int mb) {
  DeviceActivations& a = act(block, mb);
  const float* x = block_input(block, mb);
  float* ln = a.ln.sized(nc());
  layernorm_forward(ln, a.mean.sized(n), a.rstd.sized(n), x, P(t_ln2w, l), P(t_ln2b, l), n, C, stream);
  check_launch();
  const std::int64_t hsize = std::int64_t(n) * 4 * c_local;
  float* h = a.h.sized(hsize);
  gemm->linear_forward(h, ln, P(t_fcw, l), P(t_fcb, l), n, C, 4 * c_local);
  gelu_forward(a.g.sized(hsize), h, hsize, stream);
  check_launch();
}

void CudaGpt2Stage::Impl::head_forward(int block, int mb) {
  if (!targets_set[mb])
    fail("CudaGpt2Stage::forward: the head needs targets of microbatch {} (set_targets)", mb);
  DeviceActivations& a = act(block, mb);
  const float* x = block_input(block, mb);
  float* ln = a.ln.sized(nc());
  layernorm_forward(ln, a.mean.sized(n), a.rstd.sized(n), x, P(t_lnfw), P(t_lnfb), n, C, stream);
  check_launch();
  float* logits = a.logits.sized(std::int64_t(n) * Vp);
  gemm->linear_forward(logits, ln, P(t_wte), nullptr, n, C, Vp);
  crossentropy_forward(a.lse.sized(n), a.row_loss.sized(n), logits, targets[mb].data(), n, V, Vp, stream);
  check_launch();
  loss_known[mb] = 0;
}

void CudaGpt2Stage::Impl::finish_forward(int block, int mb) {
  const Block kind = block_at(m, block);
  const float* bias = kind.kind == BlockKind::attn ? P(t_attprojb, kind.layer) : P(t_fcprojb, kind.layer);
  const float* sum = partial_of(block, mb);
  residual_add(block_output(block, mb), block_input(block, mb), sum, bias, n, C, stream);
  check_launch();
}

void CudaGpt2Stage::Impl::layernorm_backward(float* dx, float* dw, float* db, const float* dout,
                                             const float* x, const float* w,
                                             const DeviceActivations& a) {
  float* scratch = norm_scratch.sized(nc() + column_sums_scratch(n, C));
  cuda::layernorm_backward(dx, dw, db, dout, x, w, a.mean.data(), a.rstd.data(), n, C, scratch, stream);
  check_launch();
}

void CudaGpt2Stage::Impl::finish_backward(int block, int mb) {
  device_params();
  device_grads();
  const Block kind = block_at(m, block);
  const bool attn = kind.kind == BlockKind::attn;
  const int l = kind.layer;
  const float* sum = partial_of(block, mb);
  layernorm_backward(dres(mb), attn ? G(t_ln1w, l) : G(t_ln2w, l), attn ? G(t_ln1b, l) : G(t_ln2b, l),
                     sum, block_input(block, mb), attn ? P(t_ln1w, l) : P(t_ln2w, l), act(block, mb));
}

CudaGpt2Stage::CudaGpt2Stage(const ModelSpec& m, BlockRange blocks, int tp, int tp_rank, int b,
                             int t, int max_microbatches, StageOptions options)
    : impl_(std::make_unique<Impl>(m, blocks, tp, tp_rank, b, t, max_microbatches)) {
  Impl& s = *impl_;  // the CPU stage above has validated every argument
  s.m = m;
  s.blocks = blocks;
  s.tp = tp;
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
  s.has_head = blocks.end == block_count(m);
  s.host_tp_rank = tp_rank;
  s.build_offsets();
  CUDA_CHECK(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
  s.gemm = std::make_unique<CudaGemm>(s.stream);
  if (options.tf32) s.gemm->set_tf32(true);
  const std::int64_t count = std::int64_t(s.host.params().size());
  s.params.resize(count);
  s.grads.resize(count);
  CUDA_CHECK(cudaMemsetAsync(s.grads.data(), 0, count * sizeof(float), s.stream));
  const int held = s.held();
  s.tokens.resize(s.slots);
  s.targets.resize(s.slots);
  s.token_groups.resize(s.slots);
  s.tokens_set.assign(s.slots, 0);
  s.targets_set.assign(s.slots, 0);
  s.input_written.assign(s.slots, 0);
  s.output_grad_written.assign(s.slots, 0);
  s.input.resize(s.slots);
  s.residual_grad.resize(s.slots);
  s.block_out.resize(s.slots);
  s.partial.resize(s.slots);
  for (int mb = 0; mb < s.slots; ++mb) {
    s.block_out[mb].resize(held);
    s.partial[mb].resize(held);
  }
  s.partial_on_host.assign(s.slots, std::vector<char>(held, 0));
  s.forwarded.assign(s.slots, std::vector<char>(held, 0));
  s.acts.resize(s.slots);
  for (auto& slot : s.acts) slot.resize(held);
  s.losses.assign(s.slots, 0.0f);
  s.loss_known.assign(s.slots, 0);
}

CudaGpt2Stage::~CudaGpt2Stage() {
  if (impl_ && impl_->stream) {
    cudaStreamSynchronize(impl_->stream);
    impl_->gemm.reset();
    cudaStreamDestroy(impl_->stream);
  }
}

std::span<float> CudaGpt2Stage::params() {
  // The device never changes parameters, so the host copy is current; the caller may write it.
  impl_->params_on_host_newer = true;
  return impl_->host.params();
}

std::span<float> CudaGpt2Stage::grads() {
  Impl& s = *impl_;
  if (!s.grads_on_host) {
    s.download(s.host.grads(), s.grads.data());
    s.grads_on_host = true;
  }
  return s.host.grads();
}

const std::vector<ParamRun>& CudaGpt2Stage::param_runs() const { return impl_->host.param_runs(); }

void CudaGpt2Stage::load_full(std::span<const float> full) {
  impl_->host.load_full(full);
  impl_->params_on_host_newer = true;
}

void CudaGpt2Stage::zero_grads() {
  Impl& s = *impl_;
  CUDA_CHECK(cudaMemsetAsync(s.grads.data(), 0, s.grads.size() * sizeof(float), s.stream));
  s.grads_on_host = false;
}

void CudaGpt2Stage::set_tokens(int mb, std::span<const int> ids) {
  Impl& s = *impl_;
  s.check_mb(mb, "set_tokens");
  s.host.set_tokens(mb, ids);  // validates the ids
  CUDA_CHECK(cudaMemcpyAsync(s.tokens[mb].sized(s.n), ids.data(), ids.size() * sizeof(int),
                             cudaMemcpyHostToDevice, s.stream));
  // Rows grouped by token, rows ascending within a group: the embedding backward adds each
  // token's rows in the CPU kernel's order.
  std::vector<int> order(ids.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return ids[x] < ids[y]; });
  std::vector<int> start, token;
  for (std::size_t k = 0; k < order.size(); ++k)
    if (k == 0 || ids[order[k]] != ids[order[k - 1]]) {
      start.push_back(int(k));
      token.push_back(ids[order[k]]);
    }
  start.push_back(int(order.size()));
  TokenGroups& g = s.token_groups[mb];
  g.groups = int(token.size());
  CUDA_CHECK(cudaMemcpyAsync(g.rows_by_token.sized(std::int64_t(order.size())), order.data(),
                             order.size() * sizeof(int), cudaMemcpyHostToDevice, s.stream));
  CUDA_CHECK(cudaMemcpyAsync(g.group_start.sized(std::int64_t(start.size())), start.data(),
                             start.size() * sizeof(int), cudaMemcpyHostToDevice, s.stream));
  CUDA_CHECK(cudaMemcpyAsync(g.group_token.sized(std::int64_t(token.size())), token.data(),
                             token.size() * sizeof(int), cudaMemcpyHostToDevice, s.stream));
  CUDA_CHECK(cudaStreamSynchronize(s.stream));  // the host vectors above go out of scope
  s.tokens_set[mb] = 1;
}

void CudaGpt2Stage::set_targets(int mb, std::span<const int> ids) {
  Impl& s = *impl_;
  s.check_mb(mb, "set_targets");
  s.host.set_targets(mb, ids);
  CUDA_CHECK(cudaMemcpyAsync(s.targets[mb].sized(s.n), ids.data(), ids.size() * sizeof(int),
                             cudaMemcpyHostToDevice, s.stream));
  CUDA_CHECK(cudaStreamSynchronize(s.stream));
  s.targets_set[mb] = 1;
}

std::span<float> CudaGpt2Stage::input(int mb) {
  impl_->check_mb(mb, "input");
  impl_->input_written[mb] = 1;
  return impl_->host.input(mb);
}

std::span<float> CudaGpt2Stage::output(int mb) {
  Impl& s = *impl_;
  s.check_mb(mb, "output");
  std::span<float> out = s.host.output(mb);
  if (out.empty()) return out;  // the last stage ends in the loss
  const int last = s.blocks.end - 1;
  if (!s.forwarded[mb][last - s.blocks.begin])
    fail("CudaGpt2Stage::output: microbatch {} has not gone forward through block {}", mb, last);
  s.download(out, s.block_out[mb][last - s.blocks.begin].data());
  return out;
}

std::span<float> CudaGpt2Stage::output_grad(int mb) {
  Impl& s = *impl_;
  s.check_mb(mb, "output_grad");
  std::span<float> g = s.host.output_grad(mb);
  if (!g.empty()) s.output_grad_written[mb] = 1;
  return g;
}

std::span<float> CudaGpt2Stage::input_grad(int mb) {
  Impl& s = *impl_;
  s.check_mb(mb, "input_grad");
  std::span<float> g = s.host.input_grad(mb);
  if (s.residual_grad[mb].size() == s.nc()) s.download(g, s.residual_grad[mb].data());
  return g;
}

void CudaGpt2Stage::forward(int block, int mb) {
  Impl& s = *impl_;
  s.check(block, mb, "forward");
  s.device_params();
  const Block kind = block_at(s.m, block);
  switch (kind.kind) {
    case BlockKind::embed:
      if (!s.tokens_set[mb])
        fail("CudaGpt2Stage::forward: the embedding needs tokens of microbatch {} (set_tokens)", mb);
      embedding_forward(s.block_output(block, mb), s.tokens[mb].data(), s.P(t_wte), s.P(t_wpe), s.n,
                        s.t, s.C, s.stream);
      s.check_launch();
      break;
    case BlockKind::attn:
      s.attn_branch(block, kind.layer, mb);
      s.partial_on_host[mb][block - s.blocks.begin] = 0;
      s.gemm->linear_forward(s.partial_of(block, mb), s.act(block, mb).y.data(),
                             s.P(t_attprojw, kind.layer), nullptr, s.n, s.c_local, s.C);
      if (s.tp == 1) s.finish_forward(block, mb);
      break;
    case BlockKind::mlp:
      s.mlp_branch(block, kind.layer, mb);
      s.partial_on_host[mb][block - s.blocks.begin] = 0;
      s.gemm->linear_forward(s.partial_of(block, mb), s.act(block, mb).g.data(),
                             s.P(t_fcprojw, kind.layer), nullptr, s.n, 4 * s.c_local, s.C);
      if (s.tp == 1) s.finish_forward(block, mb);
      break;
    case BlockKind::head:
      s.head_forward(block, mb);
      break;
  }
  s.forwarded[mb][block - s.blocks.begin] = 1;
}

std::span<float> CudaGpt2Stage::tp_partial(int block, int mb) {
  Impl& s = *impl_;
  s.check(block, mb, "tp_partial");
  std::span<float> host = s.host.tp_partial(block, mb);  // refuses blocks without a partial
  const int k = block - s.blocks.begin;
  if (!s.partial_on_host[mb][k]) {
    s.download(host, s.partial[mb][k].sized(s.nc()));
    s.partial_on_host[mb][k] = 1;  // the caller sums into it; uploaded by finish_*
  }
  return host;
}

void CudaGpt2Stage::finish_forward(int block, int mb) {
  Impl& s = *impl_;
  s.check(block, mb, "finish_forward");
  (void)s.host.tp_partial(block, mb);  // the same refusal as the CPU stage for unsplit blocks
  s.device_params();
  s.finish_forward(block, mb);
}

void CudaGpt2Stage::backward(int block, int mb, bool recompute) {
  Impl& s = *impl_;
  s.check(block, mb, "backward");
  if (!s.forwarded[mb][block - s.blocks.begin])
    fail("CudaGpt2Stage::backward: block {} of microbatch {} has no forward to go back through", block, mb);
  if (!s.keep_activations && !recompute)
    fail("CudaGpt2Stage::backward: block {} needs recompute=true (set_recompute keeps no activations)",
         block);
  s.device_params();
  s.device_grads();
  const Block kind = block_at(s.m, block);
  const int l = kind.layer;
  const std::int64_t nc = s.nc();
  if (block == s.blocks.end - 1 && kind.kind != BlockKind::head) {
    if (!s.output_grad_written[mb])
      fail("CudaGpt2Stage::backward: write output_grad({}) before the backward of block {}", mb, block);
    s.upload(s.dres(mb), s.host.output_grad(mb));
    s.output_grad_written[mb] = 0;
  }
  float* dres = s.dres(mb);
  DeviceActivations& a = s.act(block, mb);
  const int k = block - s.blocks.begin;
  switch (kind.kind) {
    case BlockKind::embed: {
      const TokenGroups& g = s.token_groups[mb];
      embedding_backward(s.G(t_wte), s.G(t_wpe), dres, g.rows_by_token.data(), g.group_start.data(),
                         g.group_token.data(), g.groups, s.n, s.t, s.C, s.stream);
      s.check_launch();
      break;
    }
    case BlockKind::attn: {
      if (recompute) s.attn_branch(block, l, mb);
      float* dy = s.scratch_a.sized(std::max(s.scratch_a.size(), std::int64_t(s.n) * 4 * s.c_local));
      float* dqkv = s.scratch_b.sized(std::max(s.scratch_b.size(), std::int64_t(s.n) * 3 * s.c_local));
      float* datt = s.datt.sized(std::int64_t(s.b) * s.nh_local * s.t * s.t);
      s.gemm->linear_backward(dy, s.G(t_attprojw, l), s.G(t_attprojb, l), dres, a.y.data(),
                              s.P(t_attprojw, l), s.n, s.c_local, s.C, s.column_sums(s.C));
      s.gemm->attention_backward(dqkv, datt, dy, a.att.data(), a.qkv.data(), s.b, s.t, s.nh_local, s.hd);
      s.partial_on_host[mb][k] = 0;
      s.gemm->linear_backward(s.partial_of(block, mb), s.G(t_qkvw, l), s.G(t_qkvb, l), dqkv, a.ln.data(),
                              s.P(t_qkvw, l), s.n, s.C, 3 * s.c_local, s.column_sums(3 * s.c_local));
      if (s.tp == 1) s.finish_backward(block, mb);
      return;
    }
    case BlockKind::mlp: {
      if (recompute) s.mlp_branch(block, l, mb);
      const std::int64_t hsize = std::int64_t(s.n) * 4 * s.c_local;
      float* dg = s.scratch_a.sized(std::max(s.scratch_a.size(), hsize));
      s.gemm->linear_backward(dg, s.G(t_fcprojw, l), s.G(t_fcprojb, l), dres, a.g.data(),
                              s.P(t_fcprojw, l), s.n, 4 * s.c_local, s.C, s.column_sums(s.C));
      gelu_backward(dg, a.h.data(), dg, hsize, s.stream);
      s.check_launch();
      s.partial_on_host[mb][k] = 0;
      s.gemm->linear_backward(s.partial_of(block, mb), s.G(t_fcw, l), s.G(t_fcb, l), dg, a.ln.data(),
                              s.P(t_fcw, l), s.n, s.C, 4 * s.c_local, s.column_sums(4 * s.c_local));
      if (s.tp == 1) s.finish_backward(block, mb);
      return;
    }
    case BlockKind::head: {
      if (recompute) s.head_forward(block, mb);
      crossentropy_backward(a.logits.data(), a.lse.data(), s.targets[mb].data(), s.n, s.V, s.Vp, s.stream);
      s.check_launch();
      float* dln = s.scratch_a.sized(std::max(s.scratch_a.size(), nc));
      s.gemm->linear_backward(dln, s.G(t_wte), nullptr, a.logits.data(), a.ln.data(), s.P(t_wte), s.n,
                              s.C, s.Vp, nullptr);
      CUDA_CHECK(cudaMemsetAsync(dres, 0, nc * sizeof(float), s.stream));
      s.layernorm_backward(dres, s.G(t_lnfw), s.G(t_lnfb), dln, s.block_input(block, mb), s.P(t_lnfw), a);
      break;
    }
  }
}

void CudaGpt2Stage::finish_backward(int block, int mb) {
  Impl& s = *impl_;
  s.check(block, mb, "finish_backward");
  (void)s.host.tp_partial(block, mb);  // the same refusal as the CPU stage for unsplit blocks
  s.finish_backward(block, mb);
}

float CudaGpt2Stage::loss(int mb) const {
  Impl& s = *impl_;
  s.check_mb(mb, "loss");
  if (!s.has_head) fail("CudaGpt2Stage::loss: this stage does not hold the head");
  if (!s.loss_known[mb]) {
    // Summed on the host in row order in double, as the CPU kernel does: the same bits each run.
    std::vector<float> rows(s.n);
    const DeviceActivations& a = s.acts[s.keep_activations ? mb : 0][s.held() - 1];
    if (a.row_loss.size() != s.n) fail("CudaGpt2Stage::loss: microbatch {} has no forward through the head", mb);
    s.download(rows, a.row_loss.data());
    double total = 0.0;
    for (float r : rows) total += r;
    s.losses[mb] = float(total / s.n);
    s.loss_known[mb] = 1;
  }
  return s.losses[mb];
}

std::span<const float> CudaGpt2Stage::logits(int mb) const {
  Impl& s = *impl_;
  s.check_mb(mb, "logits");
  if (!s.has_head) fail("CudaGpt2Stage::logits: this stage does not hold the head");
  const DeviceActivations& a = s.acts[s.keep_activations ? mb : 0][s.held() - 1];
  s.logits_host.resize(std::size_t(a.logits.size()));
  if (!s.logits_host.empty()) s.download(s.logits_host, a.logits.data());
  return s.logits_host;
}

void CudaGpt2Stage::release(int mb) {
  impl_->check_mb(mb, "release");
  std::fill(impl_->forwarded[mb].begin(), impl_->forwarded[mb].end(), 0);
}

void CudaGpt2Stage::set_recompute(bool on) {
  Impl& s = *impl_;
  s.keep_activations = !on;
  s.acts.clear();
  s.acts.resize(on ? 1 : s.slots);
  for (auto& slot : s.acts) slot.resize(s.held());
}

void CudaGpt2Stage::synchronize() { CUDA_CHECK(cudaStreamSynchronize(impl_->stream)); }

std::int64_t CudaGpt2Stage::device_bytes() const {
  const Impl& s = *impl_;
  std::int64_t floats = s.params.size() + s.grads.size() + s.scratch_a.size() + s.scratch_b.size() +
                        s.datt.size() + s.norm_scratch.size() + s.column_scratch.size();
  for (int mb = 0; mb < s.slots; ++mb) {
    floats += s.input[mb].size() + s.residual_grad[mb].size();
    for (int k = 0; k < s.held(); ++k) floats += s.block_out[mb][k].size() + s.partial[mb][k].size();
  }
  for (const auto& slot : s.acts)
    for (const DeviceActivations& a : slot)
      floats += a.ln.size() + a.mean.size() + a.rstd.size() + a.qkv.size() + a.att.size() + a.y.size() +
                a.h.size() + a.g.size() + a.logits.size() + a.lse.size() + a.row_loss.size();
  return floats * std::int64_t(sizeof(float));
}

}  // namespace fabtrain::cuda
