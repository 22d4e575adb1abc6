// BM25, the lexical baseline of search evaluation: documents ranked by the query words they
// contain, weighted by how rare each word is among the documents (idf) and damped by how often it
// repeats and how long the document is. Words are runs of letters and digits, lowercased (bytes
// beyond ASCII count as letters, so a UTF-8 word stays whole); nothing is stemmed.
//   score(d, q) = sum over distinct words w of q:
//                 idf(w) * tf(w, d) * (k1 + 1) / (tf(w, d) + k1 * (1 - b + b * |d| / avgdl))
//   idf(w)      = ln(1 + (N - n(w) + 0.5) / (n(w) + 0.5))   (never negative, as in Lucene)
// with N documents, n(w) of them holding w, |d| the words of d and avgdl their mean.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace fabtrain::text {

// k1 = 1.2 and b = 0.75: the values of Robertson and Zaragoza, "The Probabilistic Relevance
// Framework: BM25 and Beyond" (2009), section 3.4, and Lucene's BM25Similarity defaults.
struct Bm25Parameters {
  double k1 = 1.2;
  double b = 0.75;
};

// The words of a text as BM25 counts them.
std::vector<std::string> bm25_words(const std::string& text);

struct Bm25Hit {
  std::int64_t row;  // the document's position in the order given
  double score;
};

class Bm25Index {
 public:
  explicit Bm25Index(const std::vector<std::string>& documents, Bm25Parameters p = {});
  // The k documents of highest score, best first (equal scores: the earlier document first).
  // Documents holding none of the query's words score 0 and are not returned.
  std::vector<Bm25Hit> search(const std::string& query, int k) const;
  double score(const std::string& query, std::int64_t row) const;
  std::int64_t size() const { return std::int64_t(lengths_.size()); }

 private:
  double idf(const std::string& word) const;
  Bm25Parameters p_;
  double mean_length_ = 0;
  std::vector<std::int64_t> lengths_;
  // word -> (row, occurrences in that row), rows ascending
  std::unordered_map<std::string, std::vector<std::pair<std::int64_t, int>>> postings_;
};

}  // namespace fabtrain::text
