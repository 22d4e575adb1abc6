// The pieces of search evaluation that need no index: BM25's scores and ranking, recall@k and
// MRR@k, and labelled queries with their bad input, on a case small enough to compute by hand:
//   d0 "apple banana", d1 "apple apple cherry", d2 "cherry date" (3 documents, 7 words, mean 7/3)
//   q1 "apple" (relevant d0, d1), q2 "banana cherry" (relevant d2).
#include <doctest/doctest.h>

#include <cmath>

#include "common/data_dir.hpp"
#include "tests/test_support.hpp"
#include "text/bm25.hpp"
#include "text/documents.hpp"
#include "text/labelled_queries.hpp"
#include "text/retrieval_metrics.hpp"

namespace fabtrain {
namespace {

const std::vector<std::string> kDocs = {"apple banana", "Apple, apple; cherry!", "cherry date"};
const std::vector<std::string> kIds = {"d0", "d1", "d2"};

// One word's term of the score, with k1 = 1.2, b = 0.75, mean length 7/3.
double term(double idf, double tf, double length) {
  return idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / (7.0 / 3)));
}

std::vector<std::string> ranked_ids(const text::Bm25Index& index, const std::string& q, int k) {
  std::vector<std::string> ids;
  for (const auto& h : index.search(q, k)) ids.push_back(kIds[std::size_t(h.row)]);
  return ids;
}

TEST_CASE("BM25 scores three documents as computed by hand, and ranks by them") {
  CHECK(text::bm25_words("Apple, apple; cherry!") ==
        std::vector<std::string>{"apple", "apple", "cherry"});
  const text::Bm25Index index(kDocs);
  const double idf_in_two = std::log(1 + 1.5 / 2.5), idf_in_one = std::log(1 + 2.5 / 1.5);
  CHECK(index.score("apple", 0) == doctest::Approx(term(idf_in_two, 1, 2)));
  CHECK(index.score("apple", 1) == doctest::Approx(term(idf_in_two, 2, 3)));
  CHECK(index.score("apple", 2) == 0);
  CHECK(index.score("banana cherry", 0) == doctest::Approx(term(idf_in_one, 1, 2)));
  CHECK(index.score("banana cherry banana", 0) == doctest::Approx(term(idf_in_one, 1, 2)));
  CHECK(index.score("banana cherry", 2) == doctest::Approx(term(idf_in_two, 1, 2)));
  // d1 holds apple twice: first; d2 holds no query word: not returned.
  CHECK(ranked_ids(index, "apple", 10) == std::vector<std::string>{"d1", "d0"});
  CHECK(ranked_ids(index, "banana cherry", 10) == std::vector<std::string>{"d0", "d2", "d1"});
  CHECK(ranked_ids(index, "banana cherry", 1) == std::vector<std::string>{"d0"});
  CHECK(index.search("pear", 10).empty());
}

TEST_CASE("recall@k and MRR@k of two queries, by hand at k = 1 and k = 2") {
  const std::vector<text::LabelledQuery> queries = {{"apple", {"d0", "d1"}, "q:1", 1},
                                                    {"banana cherry", {"d2"}, "q:2", 2}};
  const text::Bm25Index index(kDocs);
  const std::vector<std::vector<std::string>> rankings = {ranked_ids(index, "apple", 3),
                                                          ranked_ids(index, "banana cherry", 3)};
  // k = 1: q1 finds d1 (1 of 2, rank 1), q2 finds d0 (none); k = 2: q1 both, q2 d2 at rank 2.
  const auto at1 = text::score_rankings(queries, rankings, 1);
  CHECK(at1.recall == doctest::Approx(0.25));
  CHECK(at1.mrr == doctest::Approx(0.5));
  const auto at2 = text::score_rankings(queries, rankings, 2);
  CHECK(at2.recall == doctest::Approx(1.0));
  CHECK(at2.mrr == doctest::Approx(0.75));
  CHECK(at2.queries == 2);
  CHECK(text::recall_at_k({"d0", "d0", "d1"}, {"d0", "d2"}, 3) == doctest::Approx(0.5));
  CHECK(text::reciprocal_rank_at_k({"d1", "d0", "d2"}, {"d2"}, 2) == 0);
  CHECK(text::reciprocal_rank_at_k({"d1", "d0", "d2"}, {"d2"}, 3) == doctest::Approx(1.0 / 3));
}

TEST_CASE("labelled queries are read line by line, and bad input names the file and line") {
  test::TempDir dir("fabtrain-queries");
  const std::string good = dir.write("good.jsonl",
                                     "{\"query\": \"apple\", \"relevant\": [\"d0\", \"d1\"]}\n\n"
                                     "{\"query\": \"banana cherry\", \"relevant\": [\"d2\"]}\n");
  const auto queries = text::read_labelled_queries(good);
  REQUIRE(queries.size() == 2);
  CHECK(queries[1].text == "banana cherry");
  CHECK(queries[1].relevant == std::vector<std::string>{"d2"});
  CHECK(queries[1].where == good + ":3");
  CHECK(queries[1].line == 3);
  CHECK(test::error_of([&] {
          text::check_relevant_ids(queries, {"d0", "d1"}, "the index");
        }) == good + ":3: relevant document 'd2' is not a document of the index");

  const auto error = [&](const std::string& text) {
    const std::string path = dir.write("bad.jsonl", text);
    return test::error_of([&] { text::read_labelled_queries(path); });
  };
  const std::string bad = (dir.path() / "bad.jsonl").string();
  CHECK(test::contains(error(""), bad + ": no queries"));
  CHECK(test::contains(error("\n  \n"), bad + ": no queries"));
  CHECK(test::contains(error("{\"query\": \"a\", \"relevant\": [\"d0\"]}\n{\"query\": \"b\",\n"),
                       bad + ":2"));
  CHECK(test::contains(error("[\"a\"]\n"), bad + ":1: expected a JSON object"));
  CHECK(test::contains(error("{\"query\": \"a\", \"relevant\": []}\n"),
                       bad + ":1: \"relevant\" is empty"));
  CHECK(
      test::contains(error("{\"query\": \" \", \"relevant\": [\"d0\"]}\n"), "the query is empty"));
  CHECK(test::contains(error("{\"query\": \"a\", \"relevant\": [3]}\n"), "not a document id"));
  CHECK(
      test::contains(error("{\"query\": \"a\", \"relevant\": [\"d0\", \"d0\"]}\n"), "'d0' twice"));
  CHECK(test::contains(error("{\"query\": \"a\", \"relevant\": [\"d0\"], \"k\": 3}\n"),
                       "unknown key 'k'"));
  CHECK(test::contains(error("{\"relevant\": [\"d0\"]}\n"), "no field 'query'"));
  CHECK(test::contains(
      test::error_of([&] { text::read_labelled_queries((dir.path() / "none.jsonl").string()); }),
      "cannot open"));
}

TEST_CASE("the shipped labelled queries name only shipped documents") {
  const std::string data = source_dir() + "/data/";
  std::set<std::string> ids;
  text::read_documents({data + "tiny_prose_docs.jsonl"}, {},
                       [&](text::Document&& d) { ids.insert(d.id); });
  const auto queries = text::read_labelled_queries(data + "tiny_prose_queries.jsonl");
  CHECK(queries.size() == 20);
  text::check_relevant_ids(queries, ids, "data/tiny_prose_docs.jsonl");
}

}  // namespace
}  // namespace fabtrain
