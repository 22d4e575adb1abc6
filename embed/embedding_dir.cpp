// Writing and searching an embedding folder (see embedding_dir.hpp).
#include "embed/embedding_dir.hpp"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "exec/model/checkpoint.hpp"
#include "exec/model/trainable_model.hpp"
#include "text/vocab_files.hpp"

namespace fabtrain::embed {
namespace {

void write_text(const std::string& path, const std::string& text) {
  write_file_atomically(path, text);
}

nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("{}: not found (is this a folder written by `fabtrain-exec embed`?)", path);
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    fail("{}: not valid JSON ({})", path, e.what());
  }
}

}  // namespace

EmbedSummary embed_documents(const EmbedConfig& c) {
  const auto start = std::chrono::steady_clock::now();
  const Pooling pooling = parse_pooling(c.pooling);
  if (c.checkpoint.empty())
    fail("--checkpoint: required (an llm.c model file, e.g. from train --checkpoint-dir)");
  const ModelSpec model = load_trainable_model(c.model, "embed");
  const text::Gpt2Bpe bpe = text::load_gpt2_bpe(c.vocab);
  require_gpt2_vocabulary(model, bpe, "embed");
  Embedder embedder(model, c.checkpoint, bpe);

  EmbedSummary s;
  s.dimension = model.n_embd;
  s.context = model.n_ctx;
  Matrix vectors;
  vectors.cols = model.n_embd;
  std::string listing;
  text::read_documents(text::document_paths(c.inputs), c.fields, [&](text::Document&& doc) {
    const Embedding e = embedder.embed(doc.text, pooling);
    vectors.data.insert(vectors.data.end(), e.vector.begin(), e.vector.end());
    vectors.rows++;
    s.documents++;
    s.tokens += e.tokens;
    if (e.chunks > 1) s.chunked++;
    listing += nlohmann::json{{"id", doc.id},
                              {"first_line", text::first_line(doc.text)},
                              {"tokens", e.tokens},
                              {"chunks", e.chunks}}
                   .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
               "\n";
  });

  std::error_code ec;
  std::filesystem::create_directories(c.output_dir, ec);
  if (ec) fail("{}: cannot create the folder ({})", c.output_dir, ec.message());
  Matrix unit = vectors;
  normalize_rows(unit);
  const VectorIndex index(unit, c.index);
  s.index = index.describe();
  const std::string dir = c.output_dir + "/";
  write_npy(dir + "vectors.npy", vectors);
  write_text(dir + "documents.jsonl", listing);
  index.save(dir + "index.faiss");
  const nlohmann::json meta = {{"model", c.model},
                               {"checkpoint", std::filesystem::absolute(c.checkpoint).string()},
                               {"pooling", pooling_name(pooling)},
                               {"documents", s.documents},
                               {"dimension", s.dimension},
                               {"index", s.index}};
  write_text(dir + "embed.json",
             meta.dump(2) + "\n");  // last: its presence marks a complete folder
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return s;
}

std::vector<SearchHit> search_documents(const std::string& query, const std::string& dir, int k,
                                        const std::string& vocab) {
  if (query.empty()) fail("search: the query is empty");
  if (k <= 0) fail("-k={} must be positive", k);
  const nlohmann::json meta = read_json_file(dir + "/embed.json");
  const ModelSpec model = load_model(meta.at("model").get<std::string>());
  const text::Gpt2Bpe bpe = text::load_gpt2_bpe(vocab);
  Embedder embedder(model, meta.at("checkpoint").get<std::string>(), bpe);
  const VectorIndex index(dir + "/index.faiss");

  std::vector<SearchHit> docs;
  std::ifstream listing(dir + "/documents.jsonl");
  for (std::string line; std::getline(listing, line);) {
    const auto j = nlohmann::json::parse(line);
    docs.push_back({0, 0, j.at("id").get<std::string>(), j.at("first_line").get<std::string>()});
  }
  if (std::int64_t(docs.size()) != index.size())
    fail("{}: documents.jsonl lists {} documents, index.faiss holds {}", dir, docs.size(),
         index.size());

  Matrix q;
  q.rows = 1;
  q.data = embedder.embed(query, parse_pooling(meta.at("pooling").get<std::string>())).vector;
  q.cols = std::int64_t(q.data.size());
  normalize_rows(q);
  std::vector<SearchHit> hits;
  for (const Hit& h : index.search(q.data, k)) {
    SearchHit hit = docs[std::size_t(h.row)];
    hit.rank = int(hits.size()) + 1;
    hit.score = h.score;
    hits.push_back(hit);
  }
  return hits;
}

}  // namespace fabtrain::embed
