// fabtrain-exec search "query" --index DIR -k 10: the documents of an `embed` folder most similar
// to the query (cosine), with their scores and first lines. Built with FAISS.
#ifdef FABTRAIN_HAVE_FAISS
#include <fmt/format.h>

#include <memory>

#include "command.hpp"
#include "embed/embedding_dir.hpp"
#include "text_options.hpp"

namespace fabtrain {
namespace {

struct SearchConfig {
  std::string query, index, vocab;
  int k = 10;
};

void run(const SearchConfig& c) {
  const auto hits = embed::search_documents(c.query, c.index, c.k, c.vocab);
  fmt::print("{:>4}  {:>7}  {:<24}  {}\n", "rank", "score", "id", "first line");
  for (const auto& h : hits)
    fmt::print("{:>4}  {:>7.4f}  {:<24}  {}\n", h.rank, h.score, h.id, h.first_line);
}

Registration reg(51, [](CLI::App& app) {
  auto* cmd =
      app.add_subcommand("search", "The documents of an embed folder most similar to a query");
  auto c = std::make_shared<SearchConfig>();
  cmd->add_option("query", c->query, "The query text")->required();
  cmd->add_option("--index", c->index, "Folder written by `fabtrain-exec embed`")->required();
  cmd->add_option("-k", c->k, "Hits to show")->capture_default_str();
  add_vocab_option(cmd, c->vocab);
  cmd->callback([c] { run(*c); });
});

}  // namespace
}  // namespace fabtrain
#endif
