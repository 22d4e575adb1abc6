// Pooling and chunking: a document longer than the context is cut into chunks of the context's
// length, each run alone; mean pooling averages every token's final hidden state, last-token
// pooling averages the chunks' last states. Checked against the inference path called by hand.
#include <doctest/doctest.h>

#include <cmath>

#include "common/data_dir.hpp"
#include "embed/embedder.hpp"
#include "exec/model/gpt2_stage.hpp"
#include "exec/model/model_file.hpp"
#include "tests/test_support.hpp"
#include "tests/text/text_test_support.hpp"

namespace fabtrain {
namespace {

TEST_CASE(
    "embed: long documents are chunked at the context and the chunks averaged, mean and last "
    "pooling") {
  const text::Gpt2Bpe* bpe = test::gpt2_bpe_or_skip();
  if (!bpe) return;
  test::TempDir dir("fabtrain-embedder");
  const ModelSpec model = load_model(source_dir() + "/data/gpt2-bpe-mini/config.json");
  const std::vector<float> params = init_full_parameters(model, 5);
  const std::string ckpt = (dir.path() / "m.bin").string();
  write_model_checkpoint(ckpt, model, params);
  std::string text;
  for (int i = 0; i < 60; ++i) text += "The miller rested beside the lake. ";
  std::vector<int> ids = {text::kEndOfText};
  for (int id : bpe->encode(text)) ids.push_back(id);
  REQUIRE(ids.size() > 2 * std::size_t(model.n_ctx));   // three chunks or more
  REQUIRE(ids.size() % std::size_t(model.n_ctx) != 0);  // the last one shorter

  Gpt2Inference infer(model, params);
  const int C = model.n_embd, T = model.n_ctx;
  std::vector<double> mean(std::size_t(C), 0.0), last(std::size_t(C), 0.0);
  int chunks = 0;
  for (std::size_t begin = 0; begin < ids.size(); begin += std::size_t(T), ++chunks) {
    const std::size_t n = std::min(ids.size() - begin, std::size_t(T));
    infer.reset();
    infer.forward(std::span<const int>(ids).subspan(begin, n));
    for (std::size_t i = 0; i < n; ++i)
      for (int c = 0; c < C; ++c)
        mean[std::size_t(c)] += infer.hidden()[i * std::size_t(C) + std::size_t(c)];
    for (int c = 0; c < C; ++c)
      last[std::size_t(c)] += infer.hidden()[(n - 1) * std::size_t(C) + std::size_t(c)];
  }
  const int want_chunks = int((ids.size() + std::size_t(T) - 1) / std::size_t(T));
  CHECK(chunks == want_chunks);

  embed::Embedder embedder(model, ckpt, *bpe);
  const embed::Embedding m = embedder.embed(text, embed::Pooling::mean);
  const embed::Embedding l = embedder.embed(text, embed::Pooling::last);
  CHECK(m.chunks == want_chunks);
  CHECK(m.tokens == int(ids.size()));
  double worst_mean = 0, worst_last = 0, differ = 0;
  for (int c = 0; c < C; ++c) {
    worst_mean = std::max(worst_mean, std::fabs(m.vector[std::size_t(c)] -
                                                mean[std::size_t(c)] / double(ids.size())));
    worst_last =
        std::max(worst_last, std::fabs(l.vector[std::size_t(c)] - last[std::size_t(c)] / chunks));
    differ =
        std::max(differ, double(std::fabs(m.vector[std::size_t(c)] - l.vector[std::size_t(c)])));
  }
  CHECK(worst_mean < 1e-4);
  CHECK(worst_last < 1e-4);
  CHECK(differ > 1e-3);  // the two poolings are not the same vector
}

TEST_CASE("embed refuses a model whose vocabulary is not GPT-2's") {
  const text::Gpt2Bpe* bpe = test::gpt2_bpe_or_skip();
  if (!bpe) return;
  test::TempDir dir("fabtrain-embedder");
  const ModelSpec nano = load_model("gpt2-nano");
  const std::string ckpt = (dir.path() / "nano.bin").string();
  write_model_checkpoint(ckpt, nano, init_full_parameters(nano, 1));
  CHECK(test::error_of([&] {
          embed::Embedder(nano, ckpt, *bpe);
        }).find("vocabulary of 256 tokens") != std::string::npos);
}

}  // namespace
}  // namespace fabtrain
