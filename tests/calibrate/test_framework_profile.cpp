// Framework profiles (eager Hugging Face's dropout, gelu_new, per-tensor optimizer launches):
// the extra work per block from a profile's counts, its addition to a compiled schedule, the
// profile's reading with bad fields named, and which rows of the shipped file use one.
#include <doctest/doctest.h>

#include "calibrate/framework_profile.hpp"
#include "calibrate/published_runs.hpp"
#include "sim/cost/compute_cost.hpp"
#include "tests/test_support.hpp"

using namespace fabtrain;

namespace {

FrameworkProfile dropout_everywhere() {
  FrameworkProfile f;
  f.name = "test";
  f.dropout_embeddings = f.dropout_attention_probs = true;
  f.dropout_attention_output = f.dropout_mlp_output = true;
  f.dropout_mask_bytes = 1;
  f.activation_forward = {7, 16};
  f.activation_backward = {9, 24};
  f.scores_forward = {1, 2};
  f.step_kernels_per_tensor = 10;
  f.ddp_kernels_per_tensor = 2;
  return f;
}

double total_compute_seconds(const Schedule& schedule, int rank) {
  const Catalog& cat = builtin_catalog();
  double seconds = 0;
  for (const Instruction& i : schedule.ranks[rank])
    seconds += compute_seconds(i, cat.gpu("GPU_RTX3090"), schedule.plan.precision, cat.compute,
                               Calibration{});
  return seconds;
}

}  // namespace

TEST_CASE("a profile's extra work per block: dropout with its mask, gelu_new's kernels") {
  const ModelSpec m = load_model("gpt2");
  const FrameworkProfile f = dropout_everywhere();
  const int b = 4, s = 512;
  const double t = b * s, e = 4;  // fp32
  const double scores = double(b) * m.n_head * s * s, activation = t * m.n_embd;
  const Block attn{BlockKind::attn, 0}, mlp{BlockKind::mlp, 0};
  const WorkCost a =
      framework_extra_cost(f, m, attn, b, s, 1, Precision::fp32, Attention::eager, false);
  // dropout on the probabilities and on the projection's output (2e + 1 bytes an element each),
  // and the additive mask's pass over the scores (2 passes)
  CHECK(a.bytes == doctest::Approx((scores + activation) * (2 * e + 1) + 2 * scores * e));
  CHECK(a.kernels == 3);
  CHECK(a.flops == 0);
  // flash attention drops out on chip: only the projection's dropout is left
  const WorkCost flash =
      framework_extra_cost(f, m, attn, b, s, 1, Precision::fp32, Attention::flash, false);
  CHECK(flash.bytes == doctest::Approx(activation * (2 * e + 1)));
  CHECK(flash.kernels == 1);
  const WorkCost back =
      framework_extra_cost(f, m, mlp, b, s, 2, Precision::fp32, Attention::eager, true);
  const double hidden = t * m.mlp_width() / 2;  // split over tp = 2
  CHECK(back.bytes == doctest::Approx(24 * hidden * e + activation * (2 * e + 1)));
  CHECK(back.kernels == 10);
  // the masks are what forward keeps for backward
  CHECK(framework_extra_activation_bytes(f, m, attn, b, s, 1, Attention::eager, Precision::fp32) ==
        doctest::Approx(scores + activation));
}

TEST_CASE("applied to a schedule: every block's extra work, and per-tensor launches once") {
  const ModelSpec m = load_model("gpt2");
  const FrameworkProfile f = dropout_everywhere();
  // overlap=off: one Backward for the stage (overlapped, the last backward runs per bucket)
  const Plan plan = parse_plan("dp=2,mb=1,precision=tf32,attention=eager,overlap=off");
  const Schedule plain = compile(m, plan, 8, 512);
  Schedule eager = plain;
  apply_framework(eager, m, f);
  const auto& fwd0 = std::get<Forward>(plain.ranks[0][1]);
  const auto& fwd1 = std::get<Forward>(eager.ranks[0][1]);
  const auto& bwd0 = std::get<Backward>(plain.ranks[0][2]);
  const auto& bwd1 = std::get<Backward>(eager.ranks[0][2]);
  double bytes = 0, kept = 0;
  int kernels = 0;
  for (int i = 0; i < block_count(m); ++i) {
    const WorkCost w = framework_extra_cost(f, m, block_at(m, i), 4, 512, 1, Precision::tf32,
                                            Attention::eager, false);
    bytes += w.bytes;
    kernels += w.kernels;
    kept += framework_extra_activation_bytes(f, m, block_at(m, i), 4, 512, 1, Attention::eager,
                                             Precision::fp32);
  }
  CHECK(fwd1.bytes - fwd0.bytes == doctest::Approx(bytes));
  CHECK(fwd1.kernels - fwd0.kernels == kernels);
  CHECK(fwd1.flops == fwd0.flops);
  // the masks are kept from forward and released by the backward
  CHECK(fwd1.activation_bytes - fwd0.activation_bytes == doctest::Approx(kept));
  CHECK(bwd1.activation_bytes - bwd0.activation_bytes == doctest::Approx(kept));
  // GPT-2's 148 tensors (wte, wpe, 12 a layer, ln_f): DDP's 2 copies each on the backward,
  // the optimizer loop's 10 launches each on the step, after the gradients are reduced
  int backward_kernels = 0;
  for (int i = 0; i < block_count(m); ++i)
    backward_kernels += framework_extra_cost(f, m, block_at(m, i), 4, 512, 1, Precision::tf32,
                                             Attention::eager, true)
                            .kernels;
  CHECK(bwd1.kernels - bwd0.kernels == backward_kernels + 148 * 2);
  const auto step_of = [](const Schedule& s) {
    for (const Instruction& in : s.ranks[0])
      if (const auto* o = std::get_if<OptimizerStep>(&in)) return *o;
    FAIL("no optimizer step");
    return OptimizerStep{};
  };
  CHECK(step_of(plain).kernels == 0);
  CHECK(step_of(eager).kernels == 148 * 10);
  // and the step takes longer on a GPU
  CHECK(total_compute_seconds(eager, 0) > 1.2 * total_compute_seconds(plain, 0));
  // recomputation keeps no masks, and its backward runs the extra forward kernels again
  const Plan again = parse_plan("dp=1,mb=1,recompute=on,attention=eager");
  Schedule r = compile(m, again, 4, 512);
  const Schedule r0 = r;
  apply_framework(r, m, f);
  CHECK(std::get<Forward>(r.ranks[0][1]).activation_bytes ==
        std::get<Forward>(r0.ranks[0][1]).activation_bytes);
  CHECK(std::get<Backward>(r.ranks[0][2]).kernels - std::get<Backward>(r0.ranks[0][2]).kernels ==
        backward_kernels + kernels);  // dp = 1: no DDP copies
  CHECK(step_of(r).kernels == 148 * 10);
}

TEST_CASE("profiles in the file: read strictly, and a row naming an unknown one is reported") {
  test::TempDir dir("framework");
  const std::string row = R"(  - id: {}
    source: "a test"
    url: https://example.org
    model: gpt2-nano
    seq: 64
    global_batch: 8
    plan: "dp=1"
    framework: test
    framework_profile: {}
    hardware: {{gpu: GPU_A100_80GB, nodes: 1, gpus_per_node: 1, intra_node: nvlink}}
    communicator: nccl-socket
    measured: {{step_time_s: 0.1, as_published: "100 ms"}}
)";
  const std::string profiles = R"(framework_profiles:
  eager:
    dropout: [attention_probs, mlp_output]
    activation: {forward: {kernels: 7, passes: 16}}
    step_kernels_per_tensor: 10
    source: "a test"
)";
  const PublishedFile f = load_published_runs(dir.write(
      "runs.yaml", profiles + "runs:\n" + fmt::format(fmt::runtime(row), "good", "eager") +
                       fmt::format(fmt::runtime(row), "unknown", "compiled")));
  REQUIRE(f.runs.size() == 1);
  REQUIRE(f.runs[0].framework_profile);
  CHECK(f.runs[0].framework_profile->dropout_attention_probs);
  CHECK(!f.runs[0].framework_profile->dropout_embeddings);
  CHECK(f.runs[0].framework_profile->activation_forward.kernels == 7);
  CHECK(f.runs[0].framework_profile->step_kernels_per_tensor == 10);
  REQUIRE(f.problems.size() == 1);
  CHECK(f.problems[0].find("runs[1].framework_profile") != std::string::npos);
  CHECK(f.problems[0].find("unknown framework profile 'compiled' (known: eager)") !=
        std::string::npos);
  // a bad profile is an error of the file, named by its field
  const std::string bad = R"(framework_profiles:
  eager:
    dropout: [attention_scores]
    source: "a test"
)";
  CHECK_THROWS_WITH(
      load_published_runs(
          dir.write("bad.yaml", bad + "runs:\n" + fmt::format(fmt::runtime(row), "a", "eager"))),
      doctest::Contains(
          "framework_profiles.eager.dropout: unknown dropout site 'attention_scores'"));
}

TEST_CASE(
    "the shipped file: exactly the Hugging Face transformers rows run a framework profile, "
    "PyTorch's autocast where nothing else is known, and Megatron-LM's dropout where its memory is "
    "checked") {
  const PublishedFile f = load_published_runs(builtin_published_runs_path());
  CHECK(f.framework_profiles.size() >= 3);
  int profiled = 0;
  for (const PublishedRun& r : f.runs) {
    CAPTURE(r.id);
    const bool hf = r.framework.rfind("HF transformers", 0) == 0;
    const bool autocast = r.framework_profile && r.framework_profile->name == "pytorch-autocast";
    const bool megatron = r.framework_profile && r.framework_profile->name == "megatron-lm-gpt2";
    CHECK((hf || autocast || megatron) == bool(r.framework_profile));
    if (megatron) CHECK(r.framework.rfind("Megatron-LM", 0) == 0);
    if (megatron) CHECK(r.measured.peak_memory_bytes.has_value());
    if (autocast) CHECK(r.framework.find("PyTorch 2") != std::string::npos);
    profiled += hf;
    if (r.framework_profile) CHECK(!r.framework_profile->source.empty());
  }
  CHECK(profiled >= 8);
}
