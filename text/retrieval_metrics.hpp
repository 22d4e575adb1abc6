// How well a ranking of documents answers labelled queries, cut at the first k documents:
//   recall@k: the share of a query's relevant documents among its first k, averaged over queries;
//   MRR@k:    1 / the rank of the first relevant document among the first k (0 when none is),
//             averaged over queries.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "text/labelled_queries.hpp"

namespace fabtrain::text {

double recall_at_k(const std::vector<std::string>& ranked, const std::vector<std::string>& relevant,
                   int k);
double reciprocal_rank_at_k(const std::vector<std::string>& ranked,
                            const std::vector<std::string>& relevant, int k);

struct RetrievalScores {
  int k = 0;
  std::int64_t queries = 0;
  double recall = 0, mrr = 0;  // recall@k and MRR@k
};

// rankings[i]: the document ids ranked for queries[i], best first.
RetrievalScores score_rankings(const std::vector<LabelledQuery>& queries,
                               const std::vector<std::vector<std::string>>& rankings, int k);

}  // namespace fabtrain::text
