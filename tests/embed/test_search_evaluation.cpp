// evaluate-search on the hand case of tests/text/test_search_quality.cpp (3 documents, 2
// queries), with an embedding folder of an untrained checkpoint: BM25's figures are the ones
// computed by hand; at k = 3 every document is ranked, so the embeddings' recall is exactly 1
// and their MRR the mean of 1 / the rank search gives. Bad input names the file and line.
#include <doctest/doctest.h>

#include "common/data_dir.hpp"
#include "embed/embedding_dir.hpp"
#include "embed/search_evaluation.hpp"
#include "exec/model/gpt2_stage.hpp"
#include "exec/model/model_file.hpp"
#include "tests/test_support.hpp"
#include "tests/text/text_test_support.hpp"

namespace fabtrain {
namespace {

struct HandCase {
  test::TempDir dir{"fabtrain-evaluate-search"};
  embed::SearchEvaluationConfig config;
  HandCase() {
    const ModelSpec model = load_model(source_dir() + "/data/gpt2-bpe-mini/config.json");
    const std::string ckpt = (dir.path() / "m.bin").string();
    write_model_checkpoint(ckpt, model, init_full_parameters(model, 5));
    embed::EmbedConfig e;
    e.inputs = {dir.write("docs.jsonl",
                          "{\"id\": \"d0\", \"text\": \"apple banana\"}\n"
                          "{\"id\": \"d1\", \"text\": \"Apple, apple; cherry!\"}\n"
                          "{\"id\": \"d2\", \"text\": \"cherry date\"}\n")};
    e.model = source_dir() + "/data/gpt2-bpe-mini/config.json";
    e.checkpoint = ckpt;
    e.output_dir = (dir.path() / "emb").string();
    embed::embed_documents(e);
    config.queries = dir.write("q.jsonl",
                               "{\"query\": \"apple\", \"relevant\": [\"d0\", \"d1\"]}\n"
                               "{\"query\": \"banana cherry\", \"relevant\": [\"d2\"]}\n");
    config.index = e.output_dir;
    config.documents = e.inputs;
  }
};

double reciprocal_rank(const std::string& query, const std::vector<std::string>& relevant,
                       const std::string& index) {
  for (const auto& hit : embed::search_documents(query, index, 3))
    for (const auto& id : relevant)
      if (hit.id == id) return 1.0 / hit.rank;
  return 0;
}

TEST_CASE("evaluate-search: embeddings beside BM25 on three documents and two queries") {
  if (!test::gpt2_bpe_or_skip()) return;
  HandCase c;
  c.config.k = 1;
  const embed::SearchEvaluation at1 = embed::evaluate_search(c.config);
  CHECK(at1.documents == 3);
  CHECK(at1.bm25.recall == doctest::Approx(0.25));
  CHECK(at1.bm25.mrr == doctest::Approx(0.5));
  c.config.k = 3;
  const embed::SearchEvaluation at3 = embed::evaluate_search(c.config);
  CHECK(at3.bm25.recall == doctest::Approx(1.0));
  CHECK(at3.bm25.mrr == doctest::Approx(0.75));
  CHECK(at3.embeddings.recall == doctest::Approx(1.0));
  const double mrr = (reciprocal_rank("apple", {"d0", "d1"}, c.config.index) +
                      reciprocal_rank("banana cherry", {"d2"}, c.config.index)) /
                     2;
  CHECK(at3.embeddings.mrr == doctest::Approx(mrr));
  REQUIRE(at3.queries.size() == 2);
  CHECK(at3.queries[1].bm25_rank == 2);
  CHECK(at3.queries[1].line == 2);
  CHECK(at3.queries[1].text == "banana cherry");
}

TEST_CASE("evaluate-search: bad queries and documents are named by file and line") {
  if (!test::gpt2_bpe_or_skip()) return;
  HandCase c;
  const auto error = [&] { return test::error_of([&] { embed::evaluate_search(c.config); }); };
  c.config.queries = c.dir.write("unknown.jsonl",
                                 "{\"query\": \"apple\", \"relevant\": [\"d0\"]}\n"
                                 "{\"query\": \"pear\", \"relevant\": [\"d9\"]}\n");
  CHECK(error() ==
        c.config.queries + ":2: relevant document 'd9' is not a document of " + c.config.index);
  c.config.queries = c.dir.write("empty.jsonl", "");
  CHECK(test::contains(error(), c.config.queries + ": no queries"));
  c.config.queries = c.dir.write("broken.jsonl",
                                 "{\"query\": \"apple\", \"relevant\": [\"d0\"]}\n"
                                 "{\"query\": \"apple\" \"relevant\"}\n");
  CHECK(test::contains(error(), c.config.queries + ":2"));
  c.config.queries = c.dir.write("good.jsonl", "{\"query\": \"apple\", \"relevant\": [\"d0\"]}\n");
  c.config.documents = {c.dir.write("other.jsonl",
                                    "{\"id\": \"d0\", \"text\": \"apple banana\"}\n"
                                    "{\"id\": \"d2\", \"text\": \"cherry date\"}\n")};
  CHECK(test::contains(error(), c.config.documents[0] + ":2: document 'd2' is number 2"));
  c.config.documents = {c.dir.write("short.jsonl", "{\"id\": \"d0\", \"text\": \"apple\"}\n")};
  CHECK(test::contains(error(), "--documents: 1 document, the index"));
  c.config.k = 0;
  CHECK(error() == "-k=0 must be positive");
}

TEST_CASE("evaluate-search: the verdict names the ranking better on both figures, else neither") {
  embed::SearchEvaluation e;
  const auto with = [&](double recall, double mrr) {
    e.embeddings.recall = recall, e.embeddings.mrr = mrr, e.bm25.recall = 0.5, e.bm25.mrr = 0.5;
    return embed::verdict(e);
  };
  CHECK(test::contains(with(0.6, 0.5), "the embeddings beat word matching"));
  CHECK(test::contains(with(0.5, 0.6), "the embeddings beat word matching"));
  CHECK(test::contains(with(0.4, 0.5), "word matching (BM25) beats the embeddings"));
  CHECK(test::contains(with(0.5, 0.5), "score the same"));
  CHECK(with(0.6, 0.4) ==
        "neither wins on both: the embeddings are better on recall, worse on MRR");
}

}  // namespace
}  // namespace fabtrain
