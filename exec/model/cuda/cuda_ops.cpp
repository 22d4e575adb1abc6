// CudaOps (see cuda_ops.hpp): each call enqueues its kernels or cuBLAS products on the stream and
// checks the launch; reductions are deterministic (cuda_kernels.hpp), so reruns give the same bits.
#include "exec/model/cuda/cuda_ops.hpp"

#include <algorithm>
#include <numeric>
#include <vector>

#include "exec/cuda/cuda_check.hpp"
#include "exec/cuda/cuda_device.hpp"
#include "exec/model/cuda/cuda_gemm.hpp"
#include "exec/model/cuda/cuda_kernels.hpp"

namespace fabtrain::cuda {
namespace {

// Ids on the device and, for tokens, the embedding backward's grouping of rows by token
// (deterministic, in row order).
struct CudaIds final : Ids {
  DeviceArray<int> ids, rows_by_token, group_start, group_token;
  int groups = 0;
};

const CudaIds& cuda_ids(const Ids& ids) { return static_cast<const CudaIds&>(ids); }

class CudaOps final : public Gpt2Ops {
 public:
  explicit CudaOps(OpsOptions options) {
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    set_compute_stream(stream_);
    gemm_ = std::make_unique<CudaGemm>(stream_, options.matmul);
  }
  ~CudaOps() override {
    cudaStreamSynchronize(stream_);
    for (cudaEvent_t event : marks_) cudaEventDestroy(event);
    if (compute_stream() == stream_) set_compute_stream(nullptr);
    gemm_.reset();
    cudaStreamDestroy(stream_);
  }

  std::string name() const override { return "cuda"; }
  float* alloc(std::int64_t count) override {
    return static_cast<float*>(device_alloc(std::size_t(count) * sizeof(float), "DeviceArray"));
  }
  void free(float* data) override { device_free(data); }
  bool host_memory() const override { return false; }
  void upload(float* dst, const float* host_src, std::int64_t count) override {
    CUDA_CHECK(
        cudaMemcpyAsync(dst, host_src, count * sizeof(float), cudaMemcpyHostToDevice, stream_));
  }
  void download(float* host_dst, const float* src, std::int64_t count) override {
    CUDA_CHECK(
        cudaMemcpyAsync(host_dst, src, count * sizeof(float), cudaMemcpyDeviceToHost, stream_));
    CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
  void zero(float* data, std::int64_t count) override {
    CUDA_CHECK(cudaMemsetAsync(data, 0, count * sizeof(float), stream_));
  }
  void synchronize() override { CUDA_CHECK(cudaStreamSynchronize(stream_)); }
  std::unique_ptr<Ids> make_ids() override { return std::make_unique<CudaIds>(); }
  void set_ids(Ids& ids, std::span<const int> host_ids, bool by_token) override;

  void layernorm_forward(float* out, float* mean, float* rstd, const float* x, const float* w,
                         const float* b, int n, int c) override {
    cuda::layernorm_forward(out, mean, rstd, x, w, b, n, c, stream_);
    check_launch();
  }
  void layernorm_backward(float* dx, float* dw, float* db, const float* dout, const float* x,
                          const float* w, const float* mean, const float* rstd, int n,
                          int c) override {
    float* scratch = norm_scratch_.grown(std::int64_t(n) * c + column_sums_scratch(n, c));
    cuda::layernorm_backward(dx, dw, db, dout, x, w, mean, rstd, n, c, scratch, stream_);
    check_launch();
  }
  void linear_forward(float* out, const float* in, const float* w, const float* bias, int n,
                      int in_dim, int out_dim) override {
    gemm_->linear_forward(out, in, w, bias, n, in_dim, out_dim);
  }
  void linear_backward(float* din, float* dw, float* dbias, const float* dout, const float* in,
                       const float* w, int n, int in_dim, int out_dim) override {
    gemm_->linear_backward(din, dw, dbias, dout, in, w, n, in_dim, out_dim,
                           dbias ? column_sums(n, out_dim) : nullptr);
  }
  void attention_forward(float* y, float* att, const float* qkv, int b, int t, int nh,
                         int hd) override {
    gemm_->attention_forward(y, att, qkv, b, t, nh, hd);
  }
  void attention_backward(float* dqkv, const float* dy, const float* att, const float* qkv, int b,
                          int t, int nh, int hd) override {
    float* datt = datt_.grown(std::int64_t(b) * nh * t * t);
    gemm_->attention_backward(dqkv, datt, dy, att, qkv, b, t, nh, hd);
  }
  void gelu_forward(float* out, const float* x, std::int64_t count) override {
    cuda::gelu_forward(out, x, count, stream_);
    check_launch();
  }
  void gelu_backward(float* dx, const float* x, const float* dout, std::int64_t count) override {
    cuda::gelu_backward(dx, x, dout, count, stream_);
    check_launch();
  }
  void crossentropy_forward(float* lse, float* row_loss, const float* logits, const Ids& targets,
                            int n, int v, int vp) override {
    cuda::crossentropy_forward(lse, row_loss, logits, cuda_ids(targets).ids.data(), n, v, vp,
                               stream_);
    check_launch();
  }
  void crossentropy_backward(float* logits_to_dlogits, const float* lse, const Ids& targets, int n,
                             int v, int vp) override {
    cuda::crossentropy_backward(logits_to_dlogits, lse, cuda_ids(targets).ids.data(), n, v, vp,
                                stream_);
    check_launch();
  }
  void embedding_forward(float* out, const Ids& tokens, const float* wte, const float* wpe, int n,
                         int t, int c) override {
    cuda::embedding_forward(out, cuda_ids(tokens).ids.data(), wte, wpe, n, t, c, stream_);
    check_launch();
  }
  void embedding_backward(float* dwte, float* dwpe, const float* dout, const Ids& tokens, int n,
                          int t, int c) override {
    const CudaIds& g = cuda_ids(tokens);
    cuda::embedding_backward(dwte, dwpe, dout, g.rows_by_token.data(), g.group_start.data(),
                             g.group_token.data(), g.groups, n, t, c, stream_);
    check_launch();
  }
  void residual_add(float* out, const float* a, const float* b, const float* bias, int n,
                    int c) override {
    cuda::residual_add(out, a, b, bias, n, c, stream_);
    check_launch();
  }
  bool runs_optimizer() const override { return true; }
  void scale(float* data, std::int64_t count, float factor) override {
    cuda::scale(data, count, factor, stream_);
    check_launch();
  }
  double masked_square_sum(const float* data, const float* mask, std::int64_t count) override {
    double* result = cuda::masked_square_sum(
        data, mask, count, square_scratch_.grown(masked_square_sum_scratch(count)), stream_);
    check_launch();
    double sum = 0;
    CUDA_CHECK(cudaMemcpyAsync(&sum, result, sizeof sum, cudaMemcpyDeviceToHost, stream_));
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    return sum;
  }
  void adamw(float* params, const float* grads, float* m, float* v, const float* decay,
             std::int64_t count, const AdamWArgs& a) override {
    cuda::adamw_update_scaled(params, grads, m, v, decay, count, a.lr, a.beta1, a.beta2, a.eps,
                              a.weight_decay, a.step, a.grad_scale, stream_);
    check_launch();
  }

  // One device-to-device copy per run: ZeRO's pieces are whole tensors or their rows (few per
  // layer at tp=1), queued without waiting.
  void copy_runs(float* dst, const float* src, std::span<const CopyRun> runs) override {
    for (const CopyRun& r : runs)
      CUDA_CHECK(cudaMemcpyAsync(dst + r.to, src + r.from, std::size_t(r.count) * sizeof(float),
                                 cudaMemcpyDeviceToDevice, stream_));
  }
  void add_into(float* dst, const float* src, std::int64_t count) override {
    cuda::add_into(dst, src, count, stream_);
    check_launch();
  }

  // Marks are events created once and reused every step (the step's count, grow-only).
  bool has_marks() const override { return true; }
  void mark(int k) override {
    while (int(marks_.size()) <= k) {
      cudaEvent_t event = nullptr;
      CUDA_CHECK(cudaEventCreate(&event));
      marks_.push_back(event);
    }
    CUDA_CHECK(cudaEventRecord(marks_[std::size_t(k)], stream_));
  }
  std::vector<double> mark_seconds(int n) override {
    if (n < 1 || n > int(marks_.size()))
      fail("cuda: {} marks asked for, {} recorded", n, marks_.size());
    CUDA_CHECK(cudaEventSynchronize(marks_[std::size_t(n - 1)]));
    std::vector<double> seconds(std::size_t(n), 0.0);
    for (int k = 1; k < n; ++k) {
      float ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&ms, marks_[0], marks_[std::size_t(k)]));
      seconds[std::size_t(k)] = 1e-3 * ms;
    }
    return seconds;
  }

 private:
  void check_launch() { CUDA_CHECK(cudaGetLastError()); }
  float* column_sums(int n, int cols) {
    return column_scratch_.sized(
        std::max<std::int64_t>(column_scratch_.size(), column_sums_scratch(n, cols)));
  }

  cudaStream_t stream_ = nullptr;
  std::vector<cudaEvent_t> marks_;
  std::unique_ptr<CudaGemm> gemm_;
  DeviceArray<float> datt_, norm_scratch_, column_scratch_;
  DeviceArray<double> square_scratch_;
};

void CudaOps::set_ids(Ids& ids, std::span<const int> host_ids, bool by_token) {
  CudaIds& d = static_cast<CudaIds&>(ids);
  CUDA_CHECK(cudaMemcpyAsync(d.ids.grown(std::int64_t(host_ids.size())), host_ids.data(),
                             host_ids.size() * sizeof(int), cudaMemcpyHostToDevice, stream_));
  if (by_token) {
    // Rows grouped by token, rows ascending within a group: the embedding backward adds each
    // token's rows in the CPU kernel's order.
    std::vector<int> order(host_ids.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int x, int y) { return host_ids[x] < host_ids[y]; });
    std::vector<int> start, token;
    for (std::size_t k = 0; k < order.size(); ++k)
      if (k == 0 || host_ids[order[k]] != host_ids[order[k - 1]]) {
        start.push_back(int(k));
        token.push_back(host_ids[order[k]]);
      }
    start.push_back(int(order.size()));
    d.groups = int(token.size());
    CUDA_CHECK(cudaMemcpyAsync(d.rows_by_token.grown(std::int64_t(order.size())), order.data(),
                               order.size() * sizeof(int), cudaMemcpyHostToDevice, stream_));
    CUDA_CHECK(cudaMemcpyAsync(d.group_start.grown(std::int64_t(start.size())), start.data(),
                               start.size() * sizeof(int), cudaMemcpyHostToDevice, stream_));
    CUDA_CHECK(cudaMemcpyAsync(d.group_token.grown(std::int64_t(token.size())), token.data(),
                               token.size() * sizeof(int), cudaMemcpyHostToDevice, stream_));
  }
  CUDA_CHECK(cudaStreamSynchronize(stream_));  // the host vectors above go out of scope
}

}  // namespace

std::unique_ptr<Gpt2Ops> make_cuda_ops(OpsOptions options) {
  return std::make_unique<CudaOps>(options);
}

}  // namespace fabtrain::cuda
