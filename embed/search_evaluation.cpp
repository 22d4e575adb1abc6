// Embedding search against BM25 on labelled queries (see search_evaluation.hpp).
#include "embed/search_evaluation.hpp"

#include <map>
#include <set>

#include "common/error.hpp"
#include "common/human_units.hpp"
#include "embed/embedding_dir.hpp"
#include "text/bm25.hpp"
#include "text/labelled_queries.hpp"

namespace fabtrain::embed {
namespace {

// The texts of the documents, checked to be the folder's rows: same count, same id on each row,
// every id once.
std::vector<std::string> texts_of_folder(const SearchEvaluationConfig& c,
                                         const EmbeddingFolder& folder) {
  std::vector<std::string> texts;
  std::map<std::string, std::size_t> row_of;
  const std::size_t n = folder.documents.size();
  text::read_documents(text::document_paths(c.documents), c.fields, [&](text::Document&& doc) {
    const std::size_t row = texts.size();
    const std::string where =
        doc.line > 0 ? fmt::format("{}:{}", doc.source, doc.line) : doc.source;
    if (row < n && folder.documents[row].id != doc.id)
      fail(
          "{}: document '{}' is number {} of --documents, where {} has '{}': give the files "
          "embed was given, in the same order",
          where, doc.id, row + 1, c.index, folder.documents[row].id);
    if (const auto [it, fresh] = row_of.emplace(doc.id, row); !fresh)
      fail("{}: document id '{}' appears twice (also number {}): evaluation needs unique ids",
           where, doc.id, it->second + 1);
    texts.push_back(std::move(doc.text));
  });
  if (texts.size() != n)
    fail("--documents: {}, the index {} holds {}: give the files embed was given",
         counted((long long)texts.size(), "document"), c.index, n);
  return texts;
}

int first_relevant_rank(const std::vector<std::string>& ranked, const text::LabelledQuery& q) {
  const std::set<std::string> wanted(q.relevant.begin(), q.relevant.end());
  for (std::size_t i = 0; i < ranked.size(); ++i)
    if (wanted.count(ranked[i])) return int(i) + 1;
  return 0;
}

}  // namespace

SearchEvaluation evaluate_search(const SearchEvaluationConfig& c) {
  if (c.k <= 0) fail("-k={} must be positive", c.k);
  const auto queries = text::read_labelled_queries(c.queries);
  FolderSearch search(c.index, c.vocab);
  const EmbeddingFolder& folder = search.folder();
  std::set<std::string> ids;
  for (const auto& d : folder.documents) ids.insert(d.id);
  text::check_relevant_ids(queries, ids, c.index);
  const text::Bm25Index bm25(texts_of_folder(c, folder));

  SearchEvaluation e;
  e.documents = std::int64_t(folder.documents.size());
  e.model = folder.model;
  e.pooling = folder.pooling;
  std::vector<std::vector<std::string>> by_embedding, by_bm25;
  for (const auto& q : queries) {
    auto& emb = by_embedding.emplace_back();
    for (const SearchHit& h : search.search(q.text, c.k)) emb.push_back(h.id);
    auto& lex = by_bm25.emplace_back();
    for (const text::Bm25Hit& h : bm25.search(q.text, c.k))
      lex.push_back(folder.documents[std::size_t(h.row)].id);
    e.queries.push_back({q.text, q.line, first_relevant_rank(emb, q), first_relevant_rank(lex, q)});
  }
  e.embeddings = text::score_rankings(queries, by_embedding, c.k);
  e.bm25 = text::score_rankings(queries, by_bm25, c.k);
  return e;
}

std::string verdict(const SearchEvaluation& e) {
  const double d = e.embeddings.recall - e.bm25.recall, m = e.embeddings.mrr - e.bm25.mrr;
  if (d == 0 && m == 0) return "the embeddings and word matching (BM25) score the same";
  if (d >= 0 && m >= 0) return "the embeddings beat word matching (BM25) on these queries";
  if (d <= 0 && m <= 0) return "word matching (BM25) beats the embeddings on these queries";
  return fmt::format("neither wins on both: the embeddings are {} on recall, {} on MRR",
                     d > 0 ? "better" : "worse", m > 0 ? "better" : "worse");
}

}  // namespace fabtrain::embed
