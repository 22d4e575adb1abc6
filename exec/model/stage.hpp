// The interface the interpreter plays a rank's blocks on: one rank's part of GPT-2 (the blocks
// [begin, end) of the block line), implemented by the CPU Gpt2Stage (exec/model/gpt2_stage.hpp, the
// reference, whose comments define the semantics of every call) and by the CUDA stage
// (exec/model/cuda/). All spans are host memory: a device backend copies to and from the device at
// the points where the interpreter reads or writes them. Not here: communication, the optimizer.
#pragma once
#include <span>
#include <vector>

namespace fabtrain {

struct ParamRun;
struct AdamW;
class Gpt2Ops;

class Stage {
 public:
  virtual ~Stage() = default;

  virtual std::span<float> params() = 0;
  virtual std::span<float> grads() = 0;
  virtual const std::vector<ParamRun>& param_runs() const = 0;
  virtual void load_full(std::span<const float> full) = 0;
  virtual void zero_grads() = 0;

  virtual void set_tokens(int mb, std::span<const int> tokens) = 0;
  virtual void set_targets(int mb, std::span<const int> targets) = 0;
  virtual std::span<float> input(int mb) = 0;
  virtual std::span<float> output(int mb) = 0;
  virtual std::span<float> output_grad(int mb) = 0;
  virtual std::span<float> input_grad(int mb) = 0;

  virtual void forward(int block, int mb) = 0;
  virtual std::span<float> tp_partial(int block, int mb) = 0;
  virtual void finish_forward(int block, int mb) = 0;
  virtual void backward(int block, int mb, bool recompute) = 0;
  virtual void finish_backward(int block, int mb) = 0;
  virtual float loss(int mb) const = 0;
  virtual std::span<const float> logits(int mb) const = 0;
  virtual void release(int mb) = 0;
  virtual void set_recompute(bool on) = 0;
  // Dynamic loss scaling (exec/play/loss_scale.hpp): the head's backward multiplies the loss's
  // gradient by scale (a power of two; 1, the default, leaves it alone).
  virtual void set_loss_scale(float scale) = 0;

  // The optimizer where the parameters live, for a stage whose backend keeps them off the host
  // (device_optimizer()); the interpreter then runs the step through these calls, so neither
  // gradients nor parameters cross to the host. Otherwise the interpreter works on params() and
  // grads(), the reference. Masks are per local parameter (the interpreter's, the same every
  // step); AdamW's moments start at zero and move to the host only through adam_state().
  virtual bool device_optimizer() const { return false; }
  // The gradients in the backend's memory, for a communicator that takes device memory (valid
  // until the next call that moves them to the host; empty where the stage has none).
  virtual std::span<float> device_grads() { return {}; }
  virtual void scale_grads(float factor) {}
  // The sum of the squared gradients where counted is set, in double.
  virtual double grad_square_sum(std::span<const unsigned char> counted) { return 0; }
  // One AdamW step on every local parameter, the gradients multiplied by grad_scale first.
  virtual void adamw_step(const AdamW& adamw, std::span<const unsigned char> decay, float lr,
                          int step, float grad_scale) {}
  // Downloads AdamW's first (m) or second (v) moments; a null one is left alone.
  virtual void adam_state(std::vector<float>* m, std::vector<float>* v) {}
  virtual void set_adam_state(std::span<const float> m, std::span<const float> v) {}
  // For ZeRO's shard kept where the parameters are (exec/play/device_shard.hpp): the backend's
  // operations (null where the optimizer is the host's), and the parameters in the backend's
  // memory for a caller that reads or writes them there (an all-gather's unpack; params() then
  // downloads them).
  virtual Gpt2Ops* device_ops() { return nullptr; }
  virtual std::span<float> device_params() { return {}; }

  // Marks on the backend's queue (Gpt2Ops::mark): a stage that has them is timed from them, one
  // mark before a step and one after each instruction, and waited for once per step.
  virtual bool has_marks() const { return false; }
  virtual void mark(int k) {}
  virtual std::vector<double> mark_seconds(int n) { return {}; }

  // Waits until the work issued so far has finished (a device backend's queue), so that an
  // instruction's measured time is its own. The CPU stage works synchronously: nothing to wait for.
  virtual void synchronize() {}
};

}  // namespace fabtrain
