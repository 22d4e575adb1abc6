// BM25 over a set of documents (see bm25.hpp).
#include "text/bm25.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

namespace fabtrain::text {

std::vector<std::string> bm25_words(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  for (const char ch : text) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c >= 0x80) {
      word += char(std::tolower(c));
    } else if (!word.empty()) {
      words.push_back(std::move(word));
      word.clear();
    }
  }
  if (!word.empty()) words.push_back(std::move(word));
  return words;
}

Bm25Index::Bm25Index(const std::vector<std::string>& documents, Bm25Parameters p) : p_(p) {
  std::int64_t total = 0;
  for (std::size_t row = 0; row < documents.size(); ++row) {
    std::map<std::string, int> counts;
    const auto words = bm25_words(documents[row]);
    for (const auto& w : words) ++counts[w];
    for (const auto& [w, n] : counts) postings_[w].emplace_back(std::int64_t(row), n);
    lengths_.push_back(std::int64_t(words.size()));
    total += std::int64_t(words.size());
  }
  mean_length_ = documents.empty() ? 0 : double(total) / double(documents.size());
}

double Bm25Index::idf(const std::string& word) const {
  const auto it = postings_.find(word);
  const double n = it == postings_.end() ? 0 : double(it->second.size());
  return std::log(1 + (double(size()) - n + 0.5) / (n + 0.5));
}

std::vector<Bm25Hit> Bm25Index::search(const std::string& query, int k) const {
  const auto words = bm25_words(query);
  const std::set<std::string> distinct(words.begin(), words.end());
  std::vector<double> scores(lengths_.size(), 0.0);
  std::vector<bool> matched(lengths_.size(), false);
  for (const auto& w : distinct) {
    const auto it = postings_.find(w);
    if (it == postings_.end()) continue;
    const double weight = idf(w);
    for (const auto& [row, tf] : it->second) {
      const double length_norm =
          1 - p_.b + p_.b * double(lengths_[std::size_t(row)]) / mean_length_;
      scores[std::size_t(row)] += weight * tf * (p_.k1 + 1) / (tf + p_.k1 * length_norm);
      matched[std::size_t(row)] = true;
    }
  }
  std::vector<Bm25Hit> hits;
  for (std::size_t row = 0; row < scores.size(); ++row)
    if (matched[row]) hits.push_back({std::int64_t(row), scores[row]});
  std::stable_sort(hits.begin(), hits.end(),
                   [](const Bm25Hit& a, const Bm25Hit& b) { return a.score > b.score; });
  if (k >= 0 && hits.size() > std::size_t(k)) hits.resize(std::size_t(k));
  return hits;
}

double Bm25Index::score(const std::string& query, std::int64_t row) const {
  for (const Bm25Hit& h : search(query, -1))
    if (h.row == row) return h.score;
  return 0;
}

}  // namespace fabtrain::text
