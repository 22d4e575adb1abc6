// A Hugging Face GPT-2 config.json read strictly: every key is one fabtrain reads or one it
// knows does not change the cost of a training step; anything else is refused by name, and so is
// a config of another architecture (Llama, GPT-NeoX, ...), with what is supported.
#include <climits>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "common/strict_json.hpp"
#include "models/model_spec.hpp"

namespace fabtrain {
namespace {

// Read into the ModelSpec.
const char* const kShapeKeys[] = {"n_layer",
                                  "n_embd",
                                  "n_head",
                                  "n_positions",
                                  "vocab_size",
                                  "n_ctx",
                                  "n_inner",
                                  "tie_word_embeddings",
                                  "activation_function"};
// GPT2Config's and PretrainedConfig's keys that leave the step's FLOPs, bytes, parameters and
// memory as they are: dropout rates, initialisation, token ids, the double-heads model's summary
// head (not trained here), bookkeeping. Checked for their stock value where it matters (below).
const char* const kNeutralKeys[] = {"model_type",
                                    "architectures",
                                    "_name_or_path",
                                    "transformers_version",
                                    "torch_dtype",
                                    "attn_pdrop",
                                    "embd_pdrop",
                                    "resid_pdrop",
                                    "summary_first_dropout",
                                    "initializer_range",
                                    "bos_token_id",
                                    "eos_token_id",
                                    "pad_token_id",
                                    "use_cache",
                                    "task_specific_params",
                                    "summary_activation",
                                    "summary_proj_to_labels",
                                    "summary_type",
                                    "summary_use_proj",
                                    "layer_norm_epsilon",
                                    "scale_attn_weights",
                                    "scale_attn_by_inverse_layer_idx",
                                    "reorder_and_upcast_attn",
                                    "output_past"};
const char* const kArchitectures[] = {"GPT2LMHeadModel", "GPT2Model"};
const char* const kActivations[] = {"gelu_new", "gelu", "relu"};

std::string joined(const char* const* begin, const char* const* end) {
  std::string out;
  for (auto it = begin; it != end; ++it) out += (out.empty() ? "" : ", ") + std::string(*it);
  return out;
}
template <size_t N>
std::string joined(const char* const (&list)[N]) {
  return joined(list, list + N);
}
template <size_t N>
bool contains(const char* const (&list)[N], const std::string& key) {
  for (const char* k : list)
    if (key == k) return true;
  return false;
}

// model_type and architectures first: a Llama config is "not GPT-2", not "missing n_layer".
void require_gpt2(const nlohmann::json& j, const std::string& path) {
  const std::string supported =
      fmt::format("fabtrain supports GPT-2 configs only: model_type \"gpt2\", architectures {}",
                  joined(kArchitectures));
  if (j.contains("model_type") && j["model_type"] != "gpt2")
    fail("model file {}: model_type is {}; {}", path, j["model_type"].dump(), supported);
  if (!j.contains("architectures")) return;
  const auto& a = j["architectures"];
  if (!a.is_array())
    fail("model file {}: architectures must be a list of names; {}", path, supported);
  for (const auto& name : a)
    if (!name.is_string() || !contains(kArchitectures, name.get<std::string>()))
      fail("model file {}: architectures names {}; {}", path, name.dump(), supported);
}

void refuse_unknown_keys(const nlohmann::json& j, const std::string& path) {
  for (const auto& [key, value] : j.items())
    if (!contains(kShapeKeys, key) && !contains(kNeutralKeys, key))
      fail(
          "model file {}: key '{}' is not a GPT-2 setting fabtrain knows (it reads {}; it accepts "
          "and ignores {})",
          path, key, joined(kShapeKeys), joined(kNeutralKeys));
}

// Settings that change the numbers of a step but not its cost: only GPT-2's own values, so a
// config that trains differently is not simulated as if it did not.
void require_stock_numerics(const nlohmann::json& j, const std::string& path) {
  auto must_be = [&](const char* key, const nlohmann::json& stock) {
    if (j.contains(key) && j[key] != stock)
      fail("model file {}: {} is {}; fabtrain supports only GPT-2's {}", path, key, j[key].dump(),
           stock.dump());
  };
  must_be("scale_attn_weights", true);
  must_be("scale_attn_by_inverse_layer_idx", false);
  must_be("reorder_and_upcast_attn", false);
  if (j.contains("layer_norm_epsilon") && !j["layer_norm_epsilon"].is_number())
    fail("model file {}: layer_norm_epsilon must be a number", path);
}

}  // namespace

ModelSpec load_hf_config(const std::string& path) {
  std::ifstream in(path);
  if (!in || std::filesystem::is_directory(path)) fail("model file {}: cannot be opened", path);
  const nlohmann::json j = parse_json_strict(in, fmt::format("model file {}", path));
  if (!j.is_object())
    fail("model file {}: expected a JSON object (a Hugging Face config.json)", path);
  require_gpt2(j, path);
  refuse_unknown_keys(j, path);
  require_stock_numerics(j, path);
  auto field = [&](const char* key) -> int {
    if (!j.contains(key)) fail("model file {}: missing field '{}'", path, key);
    if (!j[key].is_number_integer())
      fail("model file {}: field '{}' must be an integer", path, key);
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
  if (j.contains("n_ctx") && field("n_ctx") != m.n_ctx)
    fail("model file {}: n_ctx={} differs from n_positions={} (GPT-2 has one context length)", path,
         field("n_ctx"), m.n_ctx);
  if (j.contains("n_inner") && !j["n_inner"].is_null()) {
    m.n_inner = field("n_inner");
    if (m.n_inner <= 0)
      fail("model file {}: n_inner={} must be positive (or null: 4*n_embd)", path, m.n_inner);
  }
  if (j.contains("tie_word_embeddings")) {
    if (!j["tie_word_embeddings"].is_boolean())
      fail("model file {}: tie_word_embeddings must be true or false", path);
    m.tie_word_embeddings = j["tie_word_embeddings"].get<bool>();
  }
  if (j.contains("activation_function")) {
    const auto& a = j["activation_function"];
    const std::string name = a.is_string() ? a.get<std::string>() : a.dump();
    if (name == "gelu_new")
      m.activation = Activation::gelu_new;
    else if (name == "gelu")
      m.activation = Activation::gelu;
    else if (name == "relu")
      m.activation = Activation::relu;
    else
      fail("model file {}: activation_function is {}; supported: {}", path, a.dump(),
           joined(kActivations));
  }
  validate(m);
  return m;
}

}  // namespace fabtrain
