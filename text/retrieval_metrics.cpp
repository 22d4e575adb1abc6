// Recall@k and MRR@k (see retrieval_metrics.hpp).
#include "text/retrieval_metrics.hpp"

#include <algorithm>
#include <cassert>
#include <set>

namespace fabtrain::text {
namespace {

std::size_t cut(const std::vector<std::string>& ranked, int k) {
  return std::min(ranked.size(), std::size_t(std::max(k, 0)));
}

}  // namespace

double recall_at_k(const std::vector<std::string>& ranked, const std::vector<std::string>& relevant,
                   int k) {
  if (relevant.empty()) return 0;
  const std::set<std::string> wanted(relevant.begin(), relevant.end());
  std::set<std::string> found;
  for (std::size_t i = 0; i < cut(ranked, k); ++i)
    if (wanted.count(ranked[i])) found.insert(ranked[i]);
  return double(found.size()) / double(wanted.size());
}

double reciprocal_rank_at_k(const std::vector<std::string>& ranked,
                            const std::vector<std::string>& relevant, int k) {
  const std::set<std::string> wanted(relevant.begin(), relevant.end());
  for (std::size_t i = 0; i < cut(ranked, k); ++i)
    if (wanted.count(ranked[i])) return 1.0 / double(i + 1);
  return 0;
}

RetrievalScores score_rankings(const std::vector<LabelledQuery>& queries,
                               const std::vector<std::vector<std::string>>& rankings, int k) {
  assert(queries.size() == rankings.size());
  RetrievalScores s;
  s.k = k;
  s.queries = std::int64_t(queries.size());
  for (std::size_t i = 0; i < queries.size(); ++i) {
    s.recall += recall_at_k(rankings[i], queries[i].relevant, k);
    s.mrr += reciprocal_rank_at_k(rankings[i], queries[i].relevant, k);
  }
  if (!queries.empty()) {
    s.recall /= double(queries.size());
    s.mrr /= double(queries.size());
  }
  return s;
}

}  // namespace fabtrain::text
