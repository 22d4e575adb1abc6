// Document embeddings by pooling hidden states (see embedder.hpp).
#include "embed/embedder.hpp"

#include "common/error.hpp"
#include "exec/model/model_file.hpp"

namespace fabtrain::embed {

Pooling parse_pooling(const std::string& name) {
  if (name == "mean") return Pooling::mean;
  if (name == "last") return Pooling::last;
  fail("--pooling={}: expected mean or last", name);
}

const char* pooling_name(Pooling p) { return p == Pooling::mean ? "mean" : "last"; }

void require_gpt2_vocabulary(const ModelSpec& model, const text::Gpt2Bpe& bpe,
                             const char* command) {
  if (model.vocab_size != bpe.vocab_size())
    fail(
        "{}: model {} has a vocabulary of {} tokens, GPT-2's tokenizer {} (train on shards from "
        "`fabtrain-exec tokenize` with a model of vocab_size {})",
        command, model.name, model.vocab_size, bpe.vocab_size(), bpe.vocab_size());
}

Embedder::Embedder(const ModelSpec& model, const std::string& checkpoint, const text::Gpt2Bpe& bpe)
    : bpe_(bpe), infer_(model, read_model_checkpoint(checkpoint, model)) {
  require_gpt2_vocabulary(model, bpe, "embed");
}

Embedding Embedder::embed(const std::string& text, Pooling pooling) {
  std::vector<std::uint16_t> ids16 = {text::kEndOfText};
  bpe_.encode(text, ids16, cache_);
  const std::vector<int> ids(ids16.begin(), ids16.end());
  const int C = dimension(), T = infer_.model().n_ctx;
  Embedding e;
  e.vector.assign(std::size_t(C), 0.0f);
  e.tokens = int(ids.size());
  for (std::size_t begin = 0; begin < ids.size(); begin += std::size_t(T)) {
    const std::size_t n = std::min(ids.size() - begin, std::size_t(T));
    infer_.reset();
    infer_.forward(std::span<const int>(ids).subspan(begin, n));
    const std::span<const float> h = infer_.hidden();
    // Mean: the sum over every token of every chunk, divided once at the end; last: one vector
    // per chunk.
    for (std::size_t i = pooling == Pooling::mean ? 0 : n - 1; i < n; ++i)
      for (int c = 0; c < C; ++c)
        e.vector[std::size_t(c)] += h[i * std::size_t(C) + std::size_t(c)];
    e.chunks++;
  }
  const float divide = pooling == Pooling::mean ? float(e.tokens) : float(e.chunks);
  for (float& v : e.vector) v /= divide;
  return e;
}

}  // namespace fabtrain::embed
