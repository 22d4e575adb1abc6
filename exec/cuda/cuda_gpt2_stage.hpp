// One rank's part of GPT-2 on a CUDA device: the same blocks, tensor-parallel split, parameter
// layout and call semantics as the CPU Gpt2Stage (exec/gpt2_stage.hpp, the reference it is
// tested against block by block), with parameters, gradients and activations in device memory,
// the matrix products on cuBLAS and the rest in the kernels of cuda_kernels.hpp.
//
// The Stage interface speaks host memory, so this stage keeps host mirrors and copies only where
// the caller touches them: params() marks the host copy as the newer one (uploaded before the
// next device use); grads() downloads the device gradients and hands the host copy over until
// the next backward or zero_grads(); input()/output_grad()/tp_partial() are uploaded before the
// call that reads them; output()/input_grad()/tp_partial()/logits()/loss() download on call.
// Work is queued on the stage's own stream; synchronize() waits for it.
// Not here: communication, the optimizer (the interpreter runs AdamW on the host copies).
#pragma once
#include <memory>

#include "exec/gpt2_stage.hpp"
#include "exec/stage.hpp"

namespace fabtrain::cuda {

struct StageOptions {
  bool tf32 = false;  // TF32 tensor-core matrix products (Ampere and newer); fp32 otherwise
};

class CudaGpt2Stage final : public Stage {
 public:
  // Uses the current CUDA device (cudaSetDevice before).
  CudaGpt2Stage(const ModelSpec& m, BlockRange blocks, int tp, int tp_rank, int b, int t,
                int max_microbatches, StageOptions options = {});
  ~CudaGpt2Stage() override;

  std::span<float> params() override;
  std::span<float> grads() override;
  const std::vector<ParamRun>& param_runs() const override;
  void load_full(std::span<const float> full) override;
  void zero_grads() override;

  void set_tokens(int mb, std::span<const int> tokens) override;
  void set_targets(int mb, std::span<const int> targets) override;
  std::span<float> input(int mb) override;
  std::span<float> output(int mb) override;
  std::span<float> output_grad(int mb) override;
  std::span<float> input_grad(int mb) override;

  void forward(int block, int mb) override;
  std::span<float> tp_partial(int block, int mb) override;
  void finish_forward(int block, int mb) override;
  void backward(int block, int mb, bool recompute) override;
  void finish_backward(int block, int mb) override;
  float loss(int mb) const override;
  std::span<const float> logits(int mb) const override;
  void release(int mb) override;
  void set_recompute(bool on) override;
  void synchronize() override;

  // Bytes of device memory this stage holds now.
  std::int64_t device_bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fabtrain::cuda
