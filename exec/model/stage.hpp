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

  // Waits until the work issued so far has finished (a device backend's queue), so that an
  // instruction's measured time is its own. The CPU stage works synchronously: nothing to wait for.
  virtual void synchronize() {}
};

}  // namespace fabtrain
