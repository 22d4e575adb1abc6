// fabtrain-exec evaluate-search QUERIES.jsonl --index DIR --documents FILES -k 10: recall@k and
// MRR@k of an embedding folder's index on labelled queries, beside BM25 over the same documents
// (does the model's embedding beat word matching?). Built with FAISS.
#ifdef FABTRAIN_HAVE_FAISS
#include <fmt/format.h>

#include <memory>

#include "command.hpp"
#include "common/human_units.hpp"
#include "common/text_table.hpp"
#include "common/text_wrap.hpp"
#include "embed/search_evaluation.hpp"
#include "text_options.hpp"

namespace fabtrain {
namespace {

struct EvaluateConfig {
  embed::SearchEvaluationConfig search;
  bool per_query = false;
};

std::string rank_text(int rank) { return rank > 0 ? fmt::format("{}", rank) : "-"; }

void print_per_query(const embed::SearchEvaluation& e, int k) {
  fmt::print("rank of the first relevant document (-: not in the first {}):\n", k);
  TextTable table(
      {{"line", true}, {"query", false, 0, true}, {"embeddings", true}, {"BM25", true}});
  for (const auto& q : e.queries)
    table.add_row(
        {std::to_string(q.line), q.text, rank_text(q.embedding_rank), rank_text(q.bm25_rank)});
  fmt::print("{}", table.render(table_width(false), 2).text);
}

void run(const EvaluateConfig& c) {
  const int k = c.search.k;
  const embed::SearchEvaluation e = embed::evaluate_search(c.search);
  const std::string header = fmt::format(
      "evaluate-search: {} of {}, {} of {} (model {}, {} pooling)",
      e.embeddings.queries == 1 ? std::string("1 query")
                                : fmt::format("{} queries", e.embeddings.queries),
      c.search.queries, counted(e.documents, "document"), c.search.index, e.model, e.pooling);
  fmt::print("{}\n", wrap_text(header, table_width(false)));
  if (c.per_query) print_per_query(e, k);
  const std::string recall = fmt::format("recall@{}", k), mrr = fmt::format("MRR@{}", k);
  fmt::print("{:<22}  {:>9}  {:>8}\n", "ranking", recall, mrr);
  fmt::print("{:<22}  {:>9.3f}  {:>8.3f}\n", "embeddings (cosine)", e.embeddings.recall,
             e.embeddings.mrr);
  fmt::print("{:<22}  {:>9.3f}  {:>8.3f}\n", "BM25 (word matching)", e.bm25.recall, e.bm25.mrr);
  fmt::print("{}\n", embed::verdict(e));
}

Registration reg(52, [](CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "evaluate-search",
      "Recall@k and MRR@k of an embed folder on labelled queries, beside BM25 word matching");
  auto c = std::make_shared<EvaluateConfig>();
  cmd->add_option("queries", c->search.queries,
                  "JSONL, one query a line: {\"query\": \"...\", \"relevant\": [\"doc id\", ...]}")
      ->required();
  cmd->add_option("--index", c->search.index, "Folder written by `fabtrain-exec embed`")
      ->required();
  cmd->add_option("--documents", c->search.documents,
                  "The files embed was given, in the same order (BM25 reads their text)")
      ->required();
  cmd->add_option("-k", c->search.k, "Documents ranked per query")->capture_default_str();
  add_document_field_options(cmd, c->search.fields);
  add_vocab_option(cmd, c->search.vocab);
  cmd->add_flag("--per-query", c->per_query,
                "Also list each query's first relevant rank under both rankings");
  cmd->callback([c] { run(*c); });
});

}  // namespace
}  // namespace fabtrain
#endif
