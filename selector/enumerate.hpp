// The search space of the selector: every plan worth simulating for a model on a slice.
// GPU subsets (per set of sites of selector/site_sets.hpp, the first k GPUs of every chosen site in
// slice order for k = 1, 2, ..., 16 and 8 counts per doubling beyond, so a subset stays balanced
// across its sites), every factorisation dp*tp*pp of its n GPUs, microbatch counts, ZeRO stages,
// pipeline schedules, recomputation and layer splits (even, and balanced to the stages' GPU speeds
// when the stages differ), and overlap: plans with communication to hide (dp > 1 or pp > 1) also
// with overlap=off, and with dp > 1 overlapped with the larger gradient bucket too
// (kLargeBucketMib: fewer latency terms over a slow link, less to hide behind the last buckets'
// backward); plans that fail validate() are left out (a bucket larger than the model). Not here:
// memory pruning, bounds or simulation (search.hpp).
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "models/model_spec.hpp"
#include "plan/plan.hpp"
#include "platforms/slice.hpp"

namespace fabtrain {

struct SearchSpace {
  int global_batch = 0;  // sequences per step; 0 = 8 per GPU of each plan (Alpa's default)
  int seq = 0;           // 0 = the model's context
  Precision precision = Precision::fp32;
  // --precision auto: `precision` (tf32) on the GPU subsets whose every GPU has it, fp32 on the
  // others; a plan has one precision, as the executor runs every rank in one.
  bool precision_where_supported = false;
  bool all_subsets = true;  // also plans on fewer GPUs than the slice has
  int max_microbatches = 64;
  bool recompute_only_if_needed = true;  // recompute=on is kept only where off does not fit
  bool overlap_variants = true;  // also overlap=off and the large bucket (see the file comment)
  // overlap=off is simulated only where its overlap=on twin does not fit (selector/search.cpp)
  bool overlap_off_only_if_needed = true;
};

// The gradient bucket the search tries beside the default 25 MiB (DeepSpeed's default
// reduce_bucket_size is 5e8 elements; 100 MiB is a middle ground, an assumption).
inline constexpr int kLargeBucketMib = 100;

// The precision of the plans on these GPUs (space.precision, or fp32 where some GPU lacks it and
// space.precision_where_supported).
Precision precision_on(const Slice& slice, const std::vector<int>& gpus, const SearchSpace& space);
// Whether a GPU type has a peak in a precision (fp32 always; tf32, fp16, bf16 from the catalog).
bool has_precision(const GpuType& type, Precision precision);

// A subset of the slice's GPUs, in slice order, with the sites it spans.
struct GpuSubset {
  std::vector<int> gpus;
  std::vector<std::string> sites;
};
// Which counts k of GPUs per site are tried: every one up to kEveryCountUpTo, beyond it
// kCountsPerOctave per doubling (multiples of a power of two: 18, 20, ..., 32, 36, ..., 64, 72,
// ..., so the degrees dp, tp and pp divide them), and every site's all. A site of 1024 GPUs then
// has 64 subsets, not 1024: the search opens subsets by their floor, largest first, and with every
// count it compiled hundreds of 1000-GPU subsets before it simulated one. (FABRIC's sites hold a
// few GPUs: every count is tried there.)
inline constexpr int kEveryCountUpTo = 16;
inline constexpr int kCountsPerOctave = 8;
bool count_tried(std::size_t take, std::size_t largest);
// The subsets of one set of sites (the first k GPUs of each, for the counts k count_tried()).
std::vector<GpuSubset> gpu_subsets_of(const Slice& slice, const std::vector<std::string>& sites);
// Every subset of every set of sites the search tries (site_sets()), or the whole slice.
std::vector<GpuSubset> gpu_subsets(const Slice& slice, bool all_subsets);

struct Candidate {
  Plan plan;
  int global_batch = 0;
  GpuSubset subset;
};

// Layers per stage proportional to each stage's slowest GPU's peak FLOP/s (largest remainder,
// at least one layer each); empty when all stages are equally fast (the even split applies).
std::vector<int> balanced_layers(const ModelSpec& model, const Slice& slice,
                                 const std::vector<int>& devices, const Plan& plan);

// Every valid candidate (validate() passes) on one GPU subset, in a deterministic order.
std::vector<Candidate> plans_on(const ModelSpec& model, const Slice& slice, const GpuSubset& subset,
                                const SearchSpace& space);
// Every valid candidate (validate() passes) of the space, in a deterministic order.
std::vector<Candidate> enumerate_plans(const ModelSpec& model, const Slice& slice,
                                       const SearchSpace& space);

}  // namespace fabtrain
