// One rank's part of GPT-2: the blocks [begin, end) of the block line (models/costs.hpp), with
// attention and MLP matrices split over tp ranks Megatron-style (qkvw/qkvb and fcw/fcb by output
// rows: whole heads and hidden units; attprojw and fcprojw by input columns), everything else
// replicated. fp32, row-major, llm.c's (out, in) weight layout. The stage is written once for
// every backend: it holds the layout, the activation slots, recomputation, the tensor-parallel
// partial protocol and the checks, and runs each block as calls of a Gpt2Ops
// (exec/model/gpt2_ops.hpp: the CPU kernels by default, the CUDA ones from exec/model/cuda/).
//
// The Stage interface speaks host memory. Where the backend's memory is the host's (the CPU),
// the spans handed out are the stage's own buffers. Otherwise the stage keeps host copies and
// moves data only where the caller touches them: params() marks the host copy as the newer one
// (uploaded before the next device use); grads() downloads the gradients and hands the host copy
// over until the next backward or zero_grads(); input()/output_grad()/tp_partial() are uploaded
// before the call that reads them; output()/input_grad()/tp_partial()/logits()/loss() download
// on call. synchronize() waits for the backend's queued work. A backend that runs the optimizer
// (Gpt2Ops::runs_optimizer) keeps AdamW's moments too and updates the parameters where they are
// (device_optimizer, adamw_step); params() then downloads them first.
// Not here: communication (the interpreter does it between calls), data loading, when the
// optimizer runs (the interpreter).
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "exec/model/gpt2_ops.hpp"
#include "exec/model/stage.hpp"
#include "models/model_spec.hpp"
#include "plan/plan.hpp"

namespace fabtrain {

// Where a run of local parameters lives in the full llm.c parameter vector (the 16 tensors in
// checkpoint order, wte padded to Vp rows). Used for init, checkpoints and gathering.
struct ParamRun {
  std::int64_t full_offset = 0;
  std::int64_t local_offset = 0;
  std::int64_t count = 0;
  bool decay = false;  // AdamW weight decay applies (2-D weights only)
};

// Full parameter vector size in llm.c layout (with Vp).
std::int64_t full_parameter_count(const ModelSpec& m);
// The reference initialisation (GPT-2's: N(0, 0.02), residual projections scaled by
// 1/sqrt(2L), LayerNorm weights 1, biases 0, wte pad rows 0), the same for every plan.
std::vector<float> init_full_parameters(const ModelSpec& m, std::uint64_t seed);

class Gpt2Stage final : public Stage {
 public:
  // b sequences of t tokens per microbatch; max_microbatches = activation slots to keep; ops:
  // the backend that runs the operations (null: the CPU's).
  Gpt2Stage(const ModelSpec& m, BlockRange blocks, int tp, int tp_rank, int b, int t,
            int max_microbatches, std::unique_ptr<Gpt2Ops> ops = nullptr);
  ~Gpt2Stage() override;

  std::span<float> params() override;
  std::span<float> grads() override;
  const std::vector<ParamRun>& param_runs() const override;  // covers params() exactly once
  void load_full(std::span<const float> full) override;  // copy this rank's runs from a full vector
  void zero_grads() override;

  // Inputs: the first stage's embed reads tokens (b*t ints); the head reads targets.
  void set_tokens(int mb, std::span<const int> tokens) override;
  void set_targets(int mb, std::span<const int> targets) override;
  // The residual stream (b*t*C floats) entering the stage (from the previous stage) and its
  // gradient leaving the stage backward (to the previous stage).
  std::span<float> input(int mb) override;   // write before forward of the stage's first block
  std::span<float> output(int mb) override;  // read after forward of the last block (not the head)
  std::span<float> output_grad(int mb) override;  // write before backward of the last block
  std::span<float> input_grad(int mb) override;   // read after backward of the first block

  // Forward of one block for microbatch mb. With tp > 1 an attn/mlp block stops at its partial
  // output: the caller sums tp_partial() over the tp group, then calls finish_forward().
  void forward(int block, int mb) override;
  std::span<float> tp_partial(int block, int mb) override;
  void finish_forward(int block, int mb) override;
  // Backward of one block (gradients accumulate into grads()). With tp > 1 an attn/mlp block
  // stops at the partial gradient of its LayerNorm output: the caller sums tp_partial() over the
  // tp group, then calls finish_backward(). Recompute: rebuilds the block's activations first.
  void backward(int block, int mb, bool recompute) override;
  void finish_backward(int block, int mb) override;
  // Mean cross-entropy of microbatch mb (after the head's forward).
  float loss(int mb) const override;
  // Logits (b*t*Vp) of microbatch mb, for tests against a reference.
  std::span<const float> logits(int mb) const override;
  // Releases microbatch mb's activations (after its backward).
  void release(int mb) override;
  // Recomputation mode (default off): forward keeps only the residual streams between blocks
  // and one shared activation slot, so every backward must pass recompute=true.
  void set_recompute(bool on) override;
  void set_loss_scale(float scale) override;
  void synchronize() override;
  bool has_marks() const override;
  void mark(int k) override;
  std::vector<double> mark_seconds(int n) override;
  // The optimizer in the backend's memory (a backend whose memory is not the host's and that
  // runs_optimizer(): the CUDA one); see Stage. params() downloads what it changed.
  bool device_optimizer() const override;
  std::span<float> device_grads() override;
  void scale_grads(float factor) override;
  double grad_square_sum(std::span<const unsigned char> counted) override;
  void adamw_step(const AdamW& adamw, std::span<const unsigned char> decay, float lr, int step,
                  float grad_scale) override;
  void adam_state(std::vector<float>* m, std::vector<float>* v) override;
  void set_adam_state(std::span<const float> m, std::span<const float> v) override;
  Gpt2Ops* device_ops() override;
  std::span<float> device_params() override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// AdamW (decoupled weight decay) over a flat range; step counts from 1.
struct AdamW {
  float beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f, weight_decay = 0.1f;
  void update(std::span<float> params, std::span<const float> grads, std::span<float> m,
              std::span<float> v, std::span<const unsigned char> decay_mask, float lr,
              int step) const;
};

}  // namespace fabtrain
