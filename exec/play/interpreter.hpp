// The interpreter: plays one rank's instruction stream of the Schedule on a Gpt2Stage and a
// Communicator, exactly in order, one std::visit per instruction, timing each one. It owns what
// the schedule's collectives act on besides the stage: the ZeRO shard of gradients, parameters
// and AdamW state, and the gradient scaling and clipping.
//
// Gradient scaling: each microbatch's backward gives the gradient of that microbatch's MEAN loss;
// the step's loss is the mean over the global batch, so the summed gradients are multiplied by
// 1/(mb*dp) once per step, just before the gradient norm (after the data-parallel reduction).
// With dynamic loss scaling (set_loss_scaling: fp16 products) the backward runs on the loss times
// the scale, the same multiplication takes 1/scale along, and a step whose norm overflowed is
// skipped (exec/play/loss_scale.hpp).
//
// Where the optimizer runs: on the host (the CPU's stage), or, for a stage whose backend keeps
// parameters on the device, on the device: without a ZeRO shard through the stage's optimizer
// calls, with one (when the communicator moves device memory) on a DeviceShard
// (exec/play/device_shard.hpp) whose collectives take device memory. The same scaling, norm,
// clipping and AdamW; only two floats of the norm and loss come to the host.
//
// ZeRO layout: exec/play/zero_layout.hpp says which local elements make up each dp rank's chunk;
// each rank owns 1/dp of every gradient bucket (plan/buckets.hpp, the same with overlap on and
// off), and bucket [begin, end) is the local elements of its blocks
// (exec/play/bucket_segments.hpp).
//
// Overlap: a Send, Recv or Collective with request >= 0 starts on the communicator and the Wait
// with that request completes it (what a collective leaves to do after it lands, such as adding
// a reduce-scatter's chunk into the shard, runs at the wait). Bucket collectives played blocking
// (request -1, overlap=off) are the same start followed at once by its wait, so overlap=on and
// off make the same calls in the same order and sum the same bits. Nothing touches a buffer in
// flight: a compute, tied-embedding, norm or optimizer instruction that would read or write one
// fails naming the request. The stream's requests are checked when the interpreter is built
// (plan/request_rules.hpp: a wait without its start, a start reused, a start never waited, a
// collective that cannot be started). Between blocks of compute the interpreter calls the
// communicator's progress() (what Open MPI needs to advance started collectives).
// Not here: where the tokens come from (a MicrobatchFeed), checkpoints, progress.
#pragma once
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "exec/comm/communicator.hpp"
#include "exec/model/gpt2_stage.hpp"
#include "exec/play/device_shard.hpp"
#include "exec/play/loss_scale.hpp"
#include "exec/play/zero_layout.hpp"
#include "plan/run_record_format.hpp"
#include "plan/schedule.hpp"

namespace fabtrain {

class Watchdog;

// Fills microbatch mb's tokens and targets (b*s each) for this rank's data-parallel replica.
using MicrobatchFeed = std::function<void(int mb, std::span<int> tokens, std::span<int> targets)>;

struct StepOutcome {
  double loss_sum = 0;   // sum of microbatch losses, on the last stage's tp rank 0, else 0
  float grad_norm = 0;   // global, before clipping
  float mean_loss = 0;   // over the global batch, reduced with the gradient norm (every rank)
  float loss_scale = 0;  // the scale the step's backward ran at (0: no loss scaling)
  bool skipped = false;  // the scaled gradients overflowed: no update, the scale halved
  std::vector<InstructionTiming> timings;
};

class Interpreter {
 public:
  Interpreter(const ModelSpec& model, const Schedule& schedule, int rank, Stage& stage,
              Communicator& comm, AdamW adamw, float grad_clip, Watchdog* watchdog = nullptr);

  // Dynamic loss scaling from the next step on (off by default).
  void set_loss_scaling(const LossScaling& settings);
  // The loss scaler's state for a checkpoint (nullopt without loss scaling), and its return on
  // resume (fails without loss scaling).
  std::optional<LossScalerState> loss_scaling_state() const;
  void restore_loss_scaling(const LossScalerState& state);
  // One training step; step counts from 0 (AdamW's t = step + 1, skipped steps counted too).
  StepOutcome play_step(int step, float lr, const MicrobatchFeed& feed);
  // Forward only over the same stream (loads, forwards, activation transfers, tensor-parallel
  // and ZeRO-3 parameter collectives); returns the loss sum like play_step.
  double evaluate(const MicrobatchFeed& feed);

  // AdamW state over the parameters this rank updates (all local ones, or its ZeRO shard); from
  // the device where the stage runs the optimizer there (written back by parameters_changed()).
  std::vector<float>& adam_m();
  std::vector<float>& adam_v();
  // After the stage's parameters were replaced (initialisation, checkpoint): refresh the shard.
  void parameters_changed();
  // Counts of the rank's parameter elements that are uniquely its own for a global sum
  // (tp replicas, the tied wte copy and dp replicas counted once).
  const std::vector<unsigned char>& counted_mask() const { return counted_local_; }
  bool is_last_stage() const { return holds_head_; }
  // Under ZeRO: all-gathers the shards into the stage's parameters (every rank of the dp group
  // calls it), so a checkpoint sees the updated weights; no-op otherwise.
  void gather_parameters();

 private:
  void allocate_shards(bool on_device);
  void build_masks(const ModelSpec& model);
  void run(const Instruction& instruction, int step, float lr, const MicrobatchFeed& feed,
           bool forward_only);
  // One handler per instruction (run() dispatches; a missing one fails to compile).
  void play(const LoadMicrobatch& in);
  void play(const Forward& in);
  void play(const Backward& in);
  void play(const Send& in);
  void play(const Recv& in);
  void play(const Collective& in);
  void play(const OptimizerStep& in);
  void play(const Wait& in);
  // Requests in flight (by the schedule's request number) and their bookkeeping.
  struct InFlight {
    std::string name;              // the start's line, for messages
    std::vector<int> comm;         // communicator requests
    std::function<void()> finish;  // after they complete (may be empty)
    BlockRange blocks{-1, -1};     // the bucket's blocks (gradients or parameters)
    bool gradients = false;        // a gradient bucket (dp or ZeRO reduce-scatter)
    bool parameters = false;       // a parameter all-gather
    int shard_bucket = -2;         // a reduce-scatter adding into the shard: its bucket (-1: all)
    long order = 0;                // start order within the step
    std::vector<float> in, out;    // the request's own buffers
  };
  // Registers (request >= 0) or completes at once (request -1) what was just started.
  void started(int request, InFlight&& flight);
  void complete(int request);
  void complete(InFlight& flight);
  void complete_earlier_scatters(const InFlight& flight);
  // Fails when something in flight conflicts with what the instruction `what` touches.
  void check_quiet(const char* what) const;  // no gradient bucket in flight
  void check_blocks(const char* what, BlockRange blocks, bool writes_grads) const;
  int bucket_index(const Collective& c) const;  // -1: the whole stage
  BlockRange bucket_blocks(int k) const;
  void start_dp_gradients(const Collective& c);
  void start_zero_gradients(const Collective& c);
  void start_zero_parameters(const Collective& c);
  void start_device_scatter(const Collective& c, int k);
  void start_device_gather(int group, int request, int k, const std::string& name);
  void device_tied_embedding(int group);
  void ensure_scaled();
  void reduce_scatter_gradients(int group);
  void all_gather_parameters(int group);
  void tied_embedding(int group);
  void gradient_norm(int group);
  void optimizer_step(int step, float lr);
  static int tag(int mb, Tensor what) { return message_tag(mb, what == Tensor::gradient); }

  const Schedule& schedule_;
  const std::vector<Instruction>& stream_;
  std::vector<std::string> names_;
  int rank_;
  Stage& stage_;
  Communicator& comm_;
  AdamW adamw_;
  float grad_clip_;
  Watchdog* watchdog_;
  RankCoord coord_;
  bool holds_embed_ = false, holds_head_ = false;
  int tokens_per_mb_ = 0;
  int blocks_end_ = 0;  // block_count(model): a Forward ending here ran the head
  std::vector<int> tokens_, targets_;

  // Gradient buckets of this stage (backward order) and their local elements; empty when dp = 1.
  BlockRange stage_range_{0, 0};
  std::vector<BlockRange> buckets_;
  std::vector<Segments> bucket_segments_;
  std::map<int, InFlight> in_flight_;
  long starts_ = 0;  // starts so far this step (InFlight::order)
  // Reduce-scatters completed at a later-started one's wait, their own wait still to come.
  std::set<int> completed_early_;

  // The stage runs the optimizer where its parameters are (a device backend, no ZeRO shard):
  // scaling, the norm's sum of squares, clipping and AdamW happen there (Stage::adamw_step).
  bool device_optimizer_ = false;

  // ZeRO
  std::unique_ptr<DeviceShard> device_shard_;  // the shard in the backend's memory, else null
  bool sharded_ = false;
  int dp_ = 1, dp_position_ = 0, dp_group_index_ = -1;
  ZeroLayout zero_;
  std::vector<float> shard_params_, shard_grads_, flat_, chunk_tmp_;
  bool scattered_ = false;            // a reduce-scatter ran this step
  bool dirty_since_scatter_ = false;  // a backward ran after the last reduce-scatter

  // the instruction being played: its step, learning rate, token feed and whether forward only
  int step_ = 0;
  float lr_ = 0;
  const MicrobatchFeed* feed_ = nullptr;
  bool forward_only_ = false;

  // per step
  bool scaled_ = false;
  float clip_scale_ = 1.0f;
  float grad_norm_ = 0;
  double loss_sum_ = 0;
  float mean_loss_ = 0;  // from the gradient-norm call of this step
  std::optional<LossScaler> loss_scaler_;
  float loss_scale_ = 1.0f;  // this step's (1 without loss scaling)
  LossScaler::Decision decision_ = LossScaler::Decision::apply;

  std::vector<unsigned char> decay_local_, counted_local_, decay_shard_, counted_shard_;
  std::vector<float> m_, v_;
  std::vector<float> wte_buffer_;
};

}  // namespace fabtrain
