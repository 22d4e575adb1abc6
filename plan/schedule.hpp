// The Schedule: for every rank the ordered instructions of one training step. It is pure data
// (no I/O, no communication), compiled once from (model, plan, batch) and played by both the
// simulator (sim/) and the executor (exec/). Neither may invent its own idea of what a step does.
//
// Instructions are small typed structs in a std::variant, dispatched with std::visit: a player
// that forgets one fails to compile. Each prints as one diffable line, e.g.
//   rank 0: fwd mb=0 blocks=0:25 flops=1.2e12
//
// Non-blocking communication: a Send, Recv or Collective with request >= 0 only STARTS; a later
// Wait with the same request on the same rank completes it. Requests are numbered per rank from 0
// in stream order of their starts and are unique within the step; request -1 (the default) is the
// old blocking instruction. Printed as the start's usual line plus " req=N", and the wait as
// "wait req=N <what> bytes=...".
#pragma once
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <variant>
#include <vector>

#include "models/costs.hpp"
#include "models/matmul_shape.hpp"
#include "plan/plan.hpp"

namespace fabtrain {

// Load the tokens (inputs and targets) of microbatch mb; on ranks of the first and last stage.
struct LoadMicrobatch {
  int mb = 0;
  int sequences = 0;  // b
  int tokens = 0;     // b*s
};

// Forward of blocks [begin, end) for microbatch mb (see models/costs.hpp for the block line).
struct Forward {
  int mb = 0;
  int begin = 0, end = 0;
  double flops = 0;             // on this rank
  double bytes = 0;             // bytes moved, for a roofline
  double activation_bytes = 0;  // kept from here until the matching Backward
  int replicas = 1;             // how many ranks do this same work (tp for embed/head)
  // Of bytes, those the weight products move as their own operands, overlapped with their
  // FLOPs; of flops and bytes, the attention core's, its own roofline (models/costs.hpp). 0: all
  // of flops in products, all of bytes element-wise traffic.
  double matmul_bytes = 0;
  double attention_flops = 0, attention_bytes = 0;
  int kernels = 0;  // CUDA kernels launched; 0: one per block
  // The weight products of flops - attention_flops, by shape (M tokens, N out, K in); empty:
  // shapes unknown, no tile or wave quantization charged.
  std::vector<MatmulShape> products;
};

// Backward of blocks [begin, end) (walked from end-1 down to begin); with recompute it first
// rebuilds the blocks' activations (its flops include that forward). Frees what Forward kept.
struct Backward {
  int mb = 0;
  int begin = 0, end = 0;
  double flops = 0;
  double bytes = 0;
  double activation_bytes = 0;  // released when done
  bool recompute = false;
  int replicas = 1;
  double matmul_bytes = 0;  // as Forward's
  double attention_flops = 0, attention_bytes = 0;
  int kernels = 0;
  std::vector<MatmulShape> products;  // as Forward's: input- and weight-gradient products
  // The head's logits (tokens x vocabulary) in fp32, the size of the loss's gradient over them:
  // a framework allocates copies of it while this backward runs (sim/memory.hpp); 0 without the
  // head.
  double logits_gradient_bytes = 0;
  // With recompute: the most this backward holds beyond what was kept at its start, when it has
  // rebuilt one layer's activations (attention and MLP) and the blocks after that layer have
  // released theirs (sim/memory.hpp); 0 without recompute.
  double rebuilt_bytes = 0;
};

enum class Tensor { activation, gradient };
// Point-to-point transfer between adjacent pipeline stages of one microbatch's boundary tensor.
struct Send {
  Tensor what = Tensor::activation;
  int mb = 0;
  int peer = 0;
  double bytes = 0;
  int request = -1;  // >= 0: only starts; the Wait with this request completes it
};
struct Recv {
  Tensor what = Tensor::activation;
  int mb = 0;
  int peer = 0;
  double bytes = 0;
  int request = -1;  // >= 0: only posted; the Wait with this request completes it
};

// Why a collective runs: tensor-parallel sums inside blocks; gradient / parameter traffic of
// the data-parallel group (plain all-reduce, ZeRO reduce-scatter and all-gather); the sum of the
// tied embedding's gradients between the first and last pipeline stage; the global gradient
// norm for clipping and the step's loss (two floats over all ranks); the all-gather over the tp
// group that rebuilds a pipeline boundary tensor received as 1/tp from each rank (p2p=scatter).
enum class Purpose {
  tp_forward,
  tp_backward,
  dp_gradients,
  zero_gradients,
  zero_parameters,
  tied_embedding,
  grad_norm,
  pipeline_gather
};
enum class CollectiveOp { all_reduce, reduce_scatter, all_gather };
struct Collective {
  CollectiveOp op = CollectiveOp::all_reduce;
  Purpose purpose = Purpose::dp_gradients;
  int group = 0;     // index into Schedule::groups
  double bytes = 0;  // the full buffer (all-reduce input; reduce-scatter input; all-gather output)
  int mb = -1;       // microbatch, or -1 for once per step
  int block = -1;    // block this belongs to (tp and ZeRO-3), or -1
  int request = -1;  // >= 0: only starts; the Wait with this request completes it
  // dp_gradients, zero_gradients, zero_parameters: the bucket's blocks [begin, end)
  // (plan/buckets.hpp); -1/-1: the whole stage. Printed as blocks=b:e.
  int begin = -1, end = -1;
};

// Completes the non-blocking Send, Recv or Collective started earlier on this rank with the same
// request. what and bytes repeat the start's, so a line can be read alone (the start is the
// truth). For a collective, op and purpose repeat the start's too. The wait is communication
// (is_communication): it is where a rank spends the communication it could not hide.
enum class Awaits { collective, send, recv };
struct Wait {
  int request = 0;
  Awaits what = Awaits::collective;
  double bytes = 0;
  CollectiveOp op = CollectiveOp::all_reduce;  // when what == collective
  Purpose purpose = Purpose::dp_gradients;     // when what == collective
};

// AdamW on the parameters this rank owns (its shard under ZeRO >= 1).
struct OptimizerStep {
  double parameters = 0;
  double bytes = 0;
  // Kernel launches beyond the one fused update (0: just that one): an eager framework's
  // optimizer, clipping and zero_grad looping over parameter tensors (models/framework_costs.hpp).
  int kernels = 0;
};

using Instruction =
    std::variant<LoadMicrobatch, Forward, Backward, Send, Recv, Collective, OptimizerStep, Wait>;

// What a collective group is for (Schedule::group_kinds, parallel to Schedule::groups).
enum class GroupKind { tp, dp, tied_embedding, world };

struct Schedule {
  int world = 0;
  Plan plan;
  int global_batch = 0;                         // sequences per step over all replicas
  int microbatch = 0;                           // sequences per microbatch (b)
  int seq = 0;                                  // tokens per sequence (s)
  std::vector<std::vector<int>> groups;         // collective groups, ranks in ring order
  std::vector<GroupKind> group_kinds;           // what each group is for
  std::vector<std::vector<Instruction>> ranks;  // ranks[r] = r's instruction stream
  std::vector<double> static_bytes;             // per rank: weights+grads+optimizer
  std::vector<ModelStateBytes> model_state;     // per rank: the same, split

  // The index into groups of rank's group of that kind; -1 where the step has none for it (no
  // dp group when dp = 1; a middle pipeline stage is in no tied-embedding group).
  int group_of(int rank, GroupKind kind) const;
};

// Compiles one training step. Validates the plan against the model and batch first.
Schedule compile(const ModelSpec& model, const Plan& plan, int global_batch, int seq);

// Groups (only those the step uses, in this order): a tp group per (dp, pp) when tp > 1, a dp
// group per (tp, pp) when dp > 1, a tied-embedding group {first stage, last stage} per (dp, tp)
// when pp > 1, and last the world group (every rank, for the gradient norm).

// Parameters one rank of a stage holds in full before any ZeRO sharding: its blocks' tensor-
// parallel shard, plus the tied wte copy (V*C) on the last stage when pp > 1.
double stage_parameters(const ModelSpec& model, const Plan& plan, int stage);

// One line per instruction: "rank R: <verb> key=value ..." (see the file comment).
std::string to_string(const Instruction& instruction);
std::string to_text(const Schedule& schedule, int only_rank = -1);
const char* to_string(Purpose p);
const char* to_string(CollectiveOp op);
const char* to_string(GroupKind kind);
const char* to_string(Tensor t);  // "act" | "grad"
const char* to_string(Awaits a);  // "collective" | "send" | "recv"
// Every field of the schedule; {"op": "fwd", ...} objects per instruction.
void to_json(nlohmann::json& j, const Instruction& instruction);
void to_json(nlohmann::json& j, const Schedule& schedule);

}  // namespace fabtrain
