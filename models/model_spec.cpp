#include "models/model_spec.hpp"

#include <filesystem>

#include "common/error.hpp"
#include "common/limits.hpp"

namespace fabtrain {

std::int64_t ModelSpec::parameters_per_layer() const {
  const std::int64_t C = n_embd;
  const std::int64_t F = mlp_width();
  // ln1 (2C) + qkv (3C*C + 3C) + proj (C*C + C) + ln2 (2C) + fc (C*F + F) + fcproj (F*C + C);
  // with F = 4C: 12C^2 + 13C
  return 4 * C * C + 2 * C * F + 9 * C + F;
}

std::int64_t ModelSpec::parameters() const {
  const std::int64_t C = n_embd;
  const std::int64_t output_layer = tie_word_embeddings ? 0 : std::int64_t(vocab_size) * C;
  return std::int64_t(vocab_size) * C + std::int64_t(n_ctx) * C + n_layer * parameters_per_layer() +
         2 * C + output_layer;
}

const char* to_string(Activation a) {
  switch (a) {
    case Activation::gelu_new:
      return "gelu_new";
    case Activation::gelu:
      return "gelu";
    case Activation::relu:
      return "relu";
  }
  return "?";
}

bool ModelSpec::is_stock_gpt2() const { return non_stock_settings().empty(); }

std::string ModelSpec::non_stock_settings() const {
  std::string out;
  auto add = [&](const std::string& s) { out += (out.empty() ? "" : ", ") + s; };
  if (mlp_width() != 4 * n_embd)
    add(fmt::format("n_inner={} (stock: 4*n_embd={})", n_inner, 4 * n_embd));
  if (!tie_word_embeddings) add("tie_word_embeddings=false (stock: true)");
  if (activation != Activation::gelu_new)
    add(fmt::format("activation_function={} (stock: gelu_new)", to_string(activation)));
  return out;
}

const std::vector<ModelSpec>& builtin_models() {
  static const std::vector<ModelSpec> models = {
      {"gpt2-nano", 2, 64, 4, 128, 256},          {"gpt2", 12, 768, 12, 1024, 50257},
      {"gpt2-medium", 24, 1024, 16, 1024, 50257}, {"gpt2-large", 36, 1280, 20, 1024, 50257},
      {"gpt2-xl", 48, 1600, 25, 1024, 50257},
  };
  return models;
}

void validate(const ModelSpec& m) {
  auto positive = [&](const char* field, int value) {
    if (value <= 0) fail("model {}: {}={} must be positive", m.name, field, value);
  };
  positive("n_layer", m.n_layer);
  positive("n_embd", m.n_embd);
  positive("n_head", m.n_head);
  positive("n_positions", m.n_ctx);
  positive("vocab_size", m.vocab_size);
  if (m.n_inner < 0)
    fail("model {}: n_inner={} must be positive (or null: 4*n_embd)", m.name, m.n_inner);
  auto at_most = [&](const char* field, int value, const Limit& limit) {
    check_limit(fmt::format("model {}: {}", m.name, field), value, limit);
  };
  at_most("n_layer", m.n_layer, limits::layers);
  at_most("n_embd", m.n_embd, limits::hidden);
  at_most("n_head", m.n_head, limits::heads);
  at_most("n_positions", m.n_ctx, limits::sequence);
  at_most("vocab_size", m.vocab_size, limits::vocabulary);
  at_most("n_inner", m.n_inner, limits::mlp_width);
  if (m.n_embd % m.n_head != 0)
    fail("model {}: n_head={} does not divide n_embd={}", m.name, m.n_head, m.n_embd);
}

ModelSpec load_hf_config(const std::string& path);  // models/hf_config.cpp

ModelSpec load_model(const std::string& name_or_path) {
  for (const auto& m : builtin_models())
    if (m.name == name_or_path) return m;
  if (std::filesystem::exists(name_or_path)) return load_hf_config(name_or_path);
  std::string names;
  for (const auto& m : builtin_models()) names += (names.empty() ? "" : ", ") + m.name;
  fail("unknown model '{}': not a built-in ({}) nor a config.json file", name_or_path, names);
}

}  // namespace fabtrain
