// The FAISS index against brute force: its top-k by cosine equals a plain loop's, flat and IVF
// (searching every list); .npy files round-trip; a query equal to a document finds it first.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/data_dir.hpp"
#include "embed/embedding_dir.hpp"
#include "exec/model/checkpoint.hpp"
#include "exec/model/gpt2_stage.hpp"
#include "tests/test_support.hpp"
#include "tests/text/text_test_support.hpp"

namespace fabtrain {
namespace {

embed::Matrix random_matrix(std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  embed::Matrix m;
  m.rows = rows, m.cols = cols;
  std::uint64_t x = seed;
  for (std::int64_t i = 0; i < rows * cols; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    m.data.push_back(float(double(x % 20001) / 10000.0 - 1.0));
  }
  return m;
}

// The k rows of largest cosine with q, by computing every one.
std::vector<std::int64_t> brute_force(const embed::Matrix& vectors, const std::vector<float>& q,
                                      int k) {
  std::vector<std::pair<double, std::int64_t>> all;
  for (std::int64_t r = 0; r < vectors.rows; ++r) {
    double dot = 0, nv = 0, nq = 0;
    for (std::int64_t c = 0; c < vectors.cols; ++c) {
      dot += double(vectors.row(r)[c]) * q[std::size_t(c)];
      nv += double(vectors.row(r)[c]) * vectors.row(r)[c];
      nq += double(q[std::size_t(c)]) * q[std::size_t(c)];
    }
    all.push_back({-dot / std::sqrt(nv * nq), r});
  }
  std::sort(all.begin(), all.end());
  std::vector<std::int64_t> rows;
  for (int i = 0; i < k; ++i) rows.push_back(all[std::size_t(i)].second);
  return rows;
}

TEST_CASE("FAISS top-k equals brute-force cosine top-k, flat and IVF") {
  const embed::Matrix vectors = random_matrix(600, 24, 42);
  embed::Matrix unit = vectors;
  embed::normalize_rows(unit);
  const embed::Matrix queries = random_matrix(20, 24, 7);
  for (const bool ivf : {false, true}) {
    embed::IndexOptions o;
    if (ivf) o.flat_max = 100, o.nlist = 10, o.nprobe = 10;  // every list searched: exact
    const embed::VectorIndex index(unit, o);
    INFO(index.describe());
    CHECK(index.describe().rfind(ivf ? "IVF" : "flat", 0) == 0);
    for (std::int64_t qi = 0; qi < queries.rows; ++qi) {
      embed::Matrix q;
      q.rows = 1, q.cols = queries.cols;
      q.data.assign(queries.row(qi), queries.row(qi) + queries.cols);
      const std::vector<std::int64_t> want = brute_force(vectors, q.data, 10);
      embed::normalize_rows(q);
      std::vector<std::int64_t> got;
      for (const auto& h : index.search(q.data, 10)) got.push_back(h.row);
      CHECK(got == want);
    }
  }
}

TEST_CASE("an index and a .npy file read back as written") {
  test::TempDir dir("fabtrain-index");
  embed::Matrix m = random_matrix(5, 3, 9);
  embed::write_npy((dir.path() / "v.npy").string(), m);
  const embed::Matrix back = embed::read_npy((dir.path() / "v.npy").string());
  CHECK(back.rows == 5);
  CHECK(back.cols == 3);
  CHECK(back.data == m.data);
  embed::normalize_rows(m);
  embed::VectorIndex(m, {}).save((dir.path() / "i.faiss").string());
  const embed::VectorIndex loaded((dir.path() / "i.faiss").string());
  CHECK(loaded.size() == 5);
  CHECK(loaded.search(std::vector<float>(m.row(3), m.row(3) + 3), 1).at(0).row == 3);
}

TEST_CASE("search: a query equal to a document's text finds that document first") {
  const text::Gpt2Bpe* bpe = test::gpt2_bpe_or_skip();
  if (!bpe) return;
  test::TempDir dir("fabtrain-embed");
  const ModelSpec model = load_model(source_dir() + "/data/gpt2-bpe-mini/config.json");
  const std::string ckpt = (dir.path() / "model.bin").string();
  write_model_checkpoint(ckpt, model, init_full_parameters(model, 3));
  embed::EmbedConfig c;
  c.inputs = {source_dir() + "/data/tiny_prose_docs.jsonl"};
  c.model = source_dir() + "/data/gpt2-bpe-mini/config.json";
  c.checkpoint = ckpt;
  c.output_dir = (dir.path() / "emb").string();
  const embed::EmbedSummary s = embed::embed_documents(c);
  REQUIRE(s.documents == 80);
  CHECK(s.chunked > 0);  // some paragraphs exceed the 128-token context
  std::ifstream docs(c.inputs[0]);
  std::string line;
  for (int i = 0; std::getline(docs, line); ++i) {
    if (i % 20 != 3) continue;  // four of them, long and short
    const auto doc = nlohmann::json::parse(line);
    const auto hits = embed::search_documents(doc["text"], c.output_dir, 3);
    REQUIRE(hits.size() == 3);
    CHECK(hits[0].id == doc["id"]);
    CHECK(hits[0].score == doctest::Approx(1.0).epsilon(1e-5));
    CHECK(hits[1].score < hits[0].score);
  }
}

}  // namespace
}  // namespace fabtrain
