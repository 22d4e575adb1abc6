// What is trained: the shape of a GPT-2 model (llm.c's names: L layers, C channels, NH heads,
// maxT context, V vocabulary, Vp padded vocabulary). Built-ins by name, or a Hugging Face
// GPT-2 config.json by path (models/hf_config.cpp). Not here: costs (costs.hpp) or weights (exec/).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace fabtrain {

// The MLP's activation (Hugging Face's activation_function): GPT-2's tanh approximation of GELU
// (gelu_new), the exact GELU, or ReLU. Element-wise, so it costs bytes, not counted FLOPs.
enum class Activation { gelu_new, gelu, relu };
const char* to_string(Activation a);

struct ModelSpec {
  std::string name;
  int n_layer = 0;                  // L
  int n_embd = 0;                   // C
  int n_head = 0;                   // NH
  int n_ctx = 0;                    // maxT, positions
  int vocab_size = 0;               // V
  int n_inner = 0;                  // the MLP's width; 0: GPT-2's 4*C
  bool tie_word_embeddings = true;  // the output layer reuses wte (GPT-2); false: its own V x C
  Activation activation = Activation::gelu_new;

  int mlp_width() const { return n_inner > 0 ? n_inner : 4 * n_embd; }
  // GPT-2 as published (4C MLP, tied output layer, gelu_new): what the executor trains.
  bool is_stock_gpt2() const;
  // The settings that differ from stock GPT-2, e.g. "n_inner=2048, tie_word_embeddings=false".
  std::string non_stock_settings() const;
  // llm.c pads the vocabulary to a multiple of 128 for its kernels; pad rows stay zero.
  int padded_vocab() const { return (vocab_size + 127) / 128 * 128; }
  int head_dim() const { return n_embd / n_head; }
  // Exact parameter count with the unpadded vocabulary (plus the output layer when untied).
  std::int64_t parameters() const;
  std::int64_t parameters_per_layer() const;
};

// gpt2, gpt2-medium, gpt2-large, gpt2-xl, gpt2-nano.
const std::vector<ModelSpec>& builtin_models();

// A built-in name, or a path to a Hugging Face GPT-2 config.json. Throws fabtrain::Error
// naming the model or the file and field.
ModelSpec load_model(const std::string& name_or_path);

// Throws fabtrain::Error when a field is out of range (n_embd not divisible by n_head, ...).
void validate(const ModelSpec& model);

}  // namespace fabtrain
