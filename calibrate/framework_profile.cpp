// Reads a framework profile and adds its kernels to a schedule (see framework_profile.hpp).
#include "calibrate/framework_profile.hpp"

#include <set>

#include "common/error.hpp"

namespace fabtrain {
namespace {

ExtraKernels read_extra(const YamlFields& parent, const std::string& key) {
  if (!parent.has(key)) return {};
  const YamlFields f(parent.file(), parent.where() + "." + key, parent.mapping(key));
  f.allow_only({"kernels", "passes"});
  ExtraKernels k{f.integer("kernels"), f.number("passes")};
  if (k.kernels < 0) fail("{}: {} must not be negative", f.field("kernels"), k.kernels);
  if (k.passes < 0) fail("{}: {} must not be negative", f.field("passes"), k.passes);
  return k;
}

void read_pair(const YamlFields& f, const std::string& key, ExtraKernels& forward,
               ExtraKernels& backward) {
  if (!f.has(key)) return;
  const YamlFields pair(f.file(), f.where() + "." + key, f.mapping(key));
  pair.allow_only({"forward", "backward"});
  forward = read_extra(pair, "forward");
  backward = read_extra(pair, "backward");
}

}  // namespace

FrameworkProfile read_framework_profile(const std::string& name, const YamlFields& f) {
  f.allow_only({"dropout", "dropout_mask_bytes", "activation", "scores", "logits",
                "step_kernels_per_tensor", "ddp_kernels_per_tensor", "autocast", "source",
                "assumed"});
  FrameworkProfile p;
  p.name = name;
  for (const std::string& site : f.text_list_or("dropout")) {
    if (site == "embeddings")
      p.dropout_embeddings = true;
    else if (site == "attention_probs")
      p.dropout_attention_probs = true;
    else if (site == "attention_output")
      p.dropout_attention_output = true;
    else if (site == "mlp_output")
      p.dropout_mlp_output = true;
    else
      fail(
          "{}: unknown dropout site '{}' (known: embeddings, attention_probs, attention_output, "
          "mlp_output)",
          f.field("dropout"), site);
  }
  p.dropout_mask_bytes = f.number_or("dropout_mask_bytes", 1);
  if (p.dropout_mask_bytes < 0)
    fail("{}: {} must not be negative", f.field("dropout_mask_bytes"), p.dropout_mask_bytes);
  read_pair(f, "activation", p.activation_forward, p.activation_backward);
  read_pair(f, "scores", p.scores_forward, p.scores_backward);
  read_pair(f, "logits", p.logits_forward, p.logits_backward);
  p.step_kernels_per_tensor = f.integer_or("step_kernels_per_tensor", 0);
  p.ddp_kernels_per_tensor = f.integer_or("ddp_kernels_per_tensor", 0);
  for (const char* key : {"step_kernels_per_tensor", "ddp_kernels_per_tensor"})
    if (f.integer_or(key, 0) < 0)
      fail("{}: {} must not be negative", f.field(key), f.integer_or(key, 0));
  p.autocast = f.flag_or("autocast", false);
  p.source = f.text("source");
  (void)f.text_list_or("assumed");  // documentation only, but it must be a list of text
  return p;
}

void apply_framework(Schedule& schedule, const ModelSpec& model, const FrameworkProfile& profile) {
  const Plan& plan = schedule.plan;
  const int b = schedule.microbatch, s = schedule.seq;
  auto add = [](auto& step, const WorkCost& w) {
    step.bytes += w.bytes;
    step.kernels += w.kernels;
  };
  for (auto& rank : schedule.ranks) {
    std::set<int> blocks;  // the blocks this rank holds
    Backward* last_backward = nullptr;
    OptimizerStep* step = nullptr;
    for (Instruction& instruction : rank) {
      if (auto* f = std::get_if<Forward>(&instruction)) {
        for (int i = f->begin; i < f->end; ++i) {
          const Block block = block_at(model, i);
          const int tp = split_of(plan, block);
          blocks.insert(i);
          add(*f, framework_extra_cost(profile, model, block, b, s, tp, plan.precision,
                                       plan.attention, false));
          if (!plan.recompute)
            f->activation_bytes += framework_extra_activation_bytes(profile, model, block, b, s, tp,
                                                                    plan.attention, plan.precision);
        }
      } else if (auto* o = std::get_if<OptimizerStep>(&instruction)) {
        step = o;
      } else if (auto* w = std::get_if<Backward>(&instruction)) {
        last_backward = w;
        for (int i = w->begin; i < w->end; ++i) {
          const Block block = block_at(model, i);
          const int tp = split_of(plan, block);
          add(*w, framework_extra_cost(profile, model, block, b, s, tp, plan.precision,
                                       plan.attention, true));
          if (w->recompute)  // the forward's extra kernels run again
            add(*w, framework_extra_cost(profile, model, block, b, s, tp, plan.precision,
                                         plan.attention, false));
          else
            w->activation_bytes += framework_extra_activation_bytes(profile, model, block, b, s, tp,
                                                                    plan.attention, plan.precision);
        }
      }
    }
    int tensors = 0;
    for (int i : blocks) tensors += parameter_tensors(model, block_at(model, i));
    // DDP copies each gradient into its bucket as the backward produces it; the optimizer,
    // clipping and zero_grad loop over the tensors after the gradients are reduced, where the
    // step's communication no longer hides them.
    if (last_backward && plan.dp > 1)
      last_backward->kernels += profile.ddp_kernels_per_tensor * tensors;
    if (step) step->kernels += profile.step_kernels_per_tensor * tensors;
  }
}

}  // namespace fabtrain
