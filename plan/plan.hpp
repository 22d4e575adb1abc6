// A Plan: how one training step of a model is split over a slice's GPUs. Text form
// "dp=2,tp=1,pp=2,mb=8,zero=0,schedule=1f1b,recompute=off,layers=10:14,precision=fp32" and a
// JSON form (attention=flash or eager, overlap=off and bucket_mib=N are printed only when not the
// default, so plans written before those keys print as they did). Keys left out take the
// defaults below. The study's techniques map onto plans: data parallel = dp=N; ZeRO-2
// = dp=N,zero=2; shard = tp=N; pipeshard = pp>1 (tp/dp per stage).
#pragma once
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "models/costs.hpp"
#include "models/model_spec.hpp"

namespace fabtrain {

enum class PipelineSchedule { gpipe, one_f_one_b };

// Every member has a default (the vectors' `= {}` too), so designated initializers such as
// Plan{.dp = 2, .mb = 4} leave nothing to -Wmissing-field-initializers.
struct Plan {
  int dp = 1;
  int tp = 1;
  int pp = 1;
  int mb = 1;    // microbatches per step (per data-parallel replica)
  int zero = 0;  // ZeRO stage 0..3 over the dp group
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
  bool recompute = false;
  std::vector<int> layers = {};  // layers per stage; empty = as even as possible
  // Explicit device order (indices into the slice's GPUs); empty = 0..n-1.
  std::vector<int> devices = {};
  Precision precision = Precision::fp32;
  Attention attention = Attention::naive;  // flash: fused (scores never in HBM); eager: PyTorch's
  // Communication overlapped with computation (non-blocking starts and waits, plan/schedule.hpp)
  // or every transfer blocking. Printed only when off.
  bool overlap = true;
  // Data-parallel gradient buckets, MiB of parameters each (plan/buckets.hpp); PyTorch DDP's
  // default bucket_cap_mb is 25. Printed only when not 25.
  int bucket_mib = 25;
  // Vocabulary-parallel (vocab=parallel): with tp > 1 the token embedding, the output layer and
  // the loss are split over the tensor-parallel ranks by vocabulary, as Megatron-LM does; else
  // (vocab=replicated, the default, what fabtrain-exec plays) every tp rank holds them whole.
  // Printed only when parallel.
  bool vocab_parallel = false;
  // Pipeline transfers scattered over tp (p2p=scatter): with tp > 1 each tensor-parallel rank
  // sends and receives 1/tp of a stage's boundary tensor and the receiving stage all-gathers it
  // over its tp group, as Megatron-LM does (--scatter-gather-tensors-in-pipeline); else
  // (p2p=whole, the default, what fabtrain-exec plays) every tp rank sends the whole tensor.
  // Printed only when scatter.
  bool pipeline_scatter = false;

  int ranks() const { return dp * tp * pp; }
  bool operator==(const Plan&) const = default;
};

Plan parse_plan(const std::string& text);  // throws fabtrain::Error naming the key and value
std::string to_string(const Plan& plan);   // canonical text form, parses back to the same plan
// For tables: only what differs from the defaults (dp, tp, pp, mb always), no device list.
std::string to_short_string(const Plan& plan);
void to_json(nlohmann::json& j, const Plan& plan);
void from_json(const nlohmann::json& j, Plan& plan);
// The study's name for a plan: "data parallel", "ZeRO-2", "shard", "pipeshard", or a mix.
std::string technique_name(const Plan& plan);
const char* to_string(PipelineSchedule s);

// The ranks that split a block's work and parameters: tp for the transformer layers, and for the
// embedding and the head tp under vocab=parallel, 1 where every tp rank holds them whole.
int split_of(const Plan& plan, Block block);
// Parameters of the last stage's copy of a tied wte (pp > 1): its vocabulary slice under
// vocab=parallel, the whole matrix otherwise.
double tied_copy_parameters(const ModelSpec& model, const Plan& plan);

// Layers of each stage: plan.layers if given, else L split as evenly as possible (earlier stages
// get the remainder). Throws when the split does not sum to L or a stage has no layer.
std::vector<int> stage_layers(const ModelSpec& model, const Plan& plan);
// The [begin, end) range of blocks (see models/costs.hpp) of each stage: the first stage also
// holds the embedding, the last also the head.
struct BlockRange {
  int begin = 0;
  int end = 0;
};
std::vector<BlockRange> stage_blocks(const ModelSpec& model, const Plan& plan);

// Rank placement (Megatron's order, tp innermost, then dp, then pp outermost), a pure function
// shared by the simulator and the executor.
struct RankCoord {
  int dp = 0;
  int tp = 0;
  int pp = 0;
};
RankCoord rank_coord(const Plan& plan, int rank);
int rank_of(const Plan& plan, RankCoord coord);
std::vector<int> tp_group(const Plan& plan, int rank);  // ranks sharing dp and pp coordinates
std::vector<int> dp_group(const Plan& plan, int rank);  // ranks sharing tp and pp coordinates
// The slice GPU index a rank runs on.
int device_of(const Plan& plan, int rank);

// Checks that do not need a slice: degrees positive, tp divides the heads, pp at most the layer
// count, mb divides the global batch, zero 0..3, layer split sums to L, bucket_mib at least 1
// and, above the default 25, at most the model's parameter bytes (the default stays valid on a
// smaller model: one bucket, as DDP makes it). global_batch in sequences.
void validate(const Plan& plan, const ModelSpec& model, int global_batch);

}  // namespace fabtrain
