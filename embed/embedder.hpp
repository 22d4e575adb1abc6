// One vector per document from a GPT-2 checkpoint: the document's tokens (end-of-text first, as
// in training) through the model, pooled over the final layer's hidden states (after the final
// LayerNorm): their mean, or the last token's. A document longer than the context is cut into
// chunks of the context's length, each run on its own, and the chunks' vectors averaged
// (weighted by their tokens for mean pooling, equally for last-token pooling).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "exec/model/gpt2_infer.hpp"
#include "text/gpt2_bpe.hpp"

namespace fabtrain::embed {

enum class Pooling { mean, last };
Pooling parse_pooling(const std::string& name);  // "mean" or "last"; else an Error
const char* pooling_name(Pooling p);

struct Embedding {
  std::vector<float> vector;  // C floats, not normalised
  int tokens = 0, chunks = 0;
};

class Embedder {
 public:
  // The model must use GPT-2's vocabulary (50257 tokens); the checkpoint must match the model.
  Embedder(const ModelSpec& model, const std::string& checkpoint, const text::Gpt2Bpe& bpe);
  Embedding embed(const std::string& text, Pooling pooling);
  int dimension() const { return infer_.model().n_embd; }

 private:
  const text::Gpt2Bpe& bpe_;
  text::Gpt2Bpe::Cache cache_;
  Gpt2Inference infer_;
};

// Checks that a model can be used with the GPT-2 tokenizer (its V is the tokenizer's).
void require_gpt2_vocabulary(const ModelSpec& model, const text::Gpt2Bpe& bpe, const char* command);

}  // namespace fabtrain::embed
