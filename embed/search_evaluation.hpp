// `fabtrain-exec evaluate-search` as a function: how well an embedding folder's index answers
// labelled queries (text/labelled_queries.hpp), beside BM25 over the same documents
// (text/bm25.hpp), so a user sees whether the model's embeddings beat word matching. Both rank
// every query; both are scored by recall@k and MRR@k (text/retrieval_metrics.hpp).
// The documents are the files given to embed, in the same order: BM25 needs their text, which
// the folder does not keep; their ids must be the folder's, row by row, and each id unique.
#pragma once
#include <string>
#include <vector>

#include "text/documents.hpp"
#include "text/retrieval_metrics.hpp"

namespace fabtrain::embed {

struct SearchEvaluationConfig {
  std::string queries;                 // labelled queries, JSONL
  std::string index;                   // folder written by embed
  std::vector<std::string> documents;  // the files embed was given
  text::DocumentFields fields;
  std::string vocab;
  int k = 10;
};

struct QueryOutcome {
  std::string text;
  int line = 0;                           // in the queries file
  int embedding_rank = 0, bm25_rank = 0;  // of its first relevant document, 0: not in the first k
};

struct SearchEvaluation {
  std::int64_t documents = 0;
  std::string model, pooling;
  text::RetrievalScores embeddings, bm25;
  std::vector<QueryOutcome> queries;
};

SearchEvaluation evaluate_search(const SearchEvaluationConfig& config);

// Which ranking wins, in one line: the one better on recall@k and MRR@k (or equal on one of
// them), the same, or neither (better on one, worse on the other).
std::string verdict(const SearchEvaluation& e);

}  // namespace fabtrain::embed
