#include "models/model_spec.hpp"

#include <climits>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "common/limits.hpp"
#include "common/strict_json.hpp"

namespace fabtrain {

std::int64_t ModelSpec::parameters_per_layer() const {
  const std::int64_t C = n_embd;
  // ln1 (2C) + qkv (3C*C + 3C) + proj (C*C + C) + ln2 (2C) + fc (4C*C + 4C) + fcproj (4C*C + C)
  return 12 * C * C + 13 * C;
}

std::int64_t ModelSpec::parameters() const {
  const std::int64_t C = n_embd;
  return std::int64_t(vocab_size) * C + std::int64_t(n_ctx) * C + n_layer * parameters_per_layer() +
         2 * C;
}

const std::vector<ModelSpec>& builtin_models() {
  static const std::vector<ModelSpec> models = {
      {"gpt2-nano", 2, 64, 4, 128, 256},
      {"gpt2", 12, 768, 12, 1024, 50257},
      {"gpt2-medium", 24, 1024, 16, 1024, 50257},
      {"gpt2-large", 36, 1280, 20, 1024, 50257},
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
  auto at_most = [&](const char* field, int value, const Limit& limit) {
    check_limit(fmt::format("model {}: {}", m.name, field), value, limit);
  };
  at_most("n_layer", m.n_layer, limits::layers);
  at_most("n_embd", m.n_embd, limits::hidden);
  at_most("n_head", m.n_head, limits::heads);
  at_most("n_positions", m.n_ctx, limits::sequence);
  at_most("vocab_size", m.vocab_size, limits::vocabulary);
  if (m.n_embd % m.n_head != 0)
    fail("model {}: n_head={} does not divide n_embd={}", m.name, m.n_head, m.n_embd);
}

static ModelSpec load_hf_config(const std::string& path) {
  std::ifstream in(path);
  if (!in || std::filesystem::is_directory(path)) fail("model file {}: cannot be opened", path);
  const nlohmann::json j = parse_json_strict(in, fmt::format("model file {}", path));
  if (!j.is_object()) fail("model file {}: expected a JSON object (a Hugging Face config.json)", path);
  auto field = [&](const char* key) -> int {
    if (!j.contains(key)) fail("model file {}: missing field '{}'", path, key);
    if (!j[key].is_number_integer()) fail("model file {}: field '{}' must be an integer", path, key);
    return int(json_integer(j[key], fmt::format("model file {}: {}", path, key), INT_MIN, INT_MAX));
  };
  ModelSpec m;
  m.name = std::filesystem::path(path).parent_path().filename().string();
  if (m.name.empty()) m.name = std::filesystem::path(path).stem().string();
  m.n_layer = field("n_layer");
  m.n_embd = field("n_embd");
  m.n_head = field("n_head");
  m.n_ctx = field("n_positions");
  m.vocab_size = field("vocab_size");
  validate(m);
  return m;
}

ModelSpec load_model(const std::string& name_or_path) {
  for (const auto& m : builtin_models())
    if (m.name == name_or_path) return m;
  if (std::filesystem::exists(name_or_path)) return load_hf_config(name_or_path);
  std::string names;
  for (const auto& m : builtin_models()) names += (names.empty() ? "" : ", ") + m.name;
  fail("unknown model '{}': not a built-in ({}) nor a config.json file", name_or_path, names);
}

}  // namespace fabtrain
