// What is trained: the shape of a GPT-2 model (llm.c's names: L layers, C channels, NH heads,
// maxT context, V vocabulary, Vp padded vocabulary). Built-ins by name, or a Hugging Face
// GPT-2 config.json by path. Not here: costs (costs.hpp) or weights (exec/).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace fabtrain {

struct ModelSpec {
  std::string name;
  int n_layer = 0;     // L
  int n_embd = 0;      // C
  int n_head = 0;      // NH
  int n_ctx = 0;       // maxT, positions
  int vocab_size = 0;  // V

  // llm.c pads the vocabulary to a multiple of 128 for its kernels; pad rows stay zero.
  int padded_vocab() const { return (vocab_size + 127) / 128 * 128; }
  int head_dim() const { return n_embd / n_head; }
  // Exact parameter count with the unpadded vocabulary (wte tied to the output layer).
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
