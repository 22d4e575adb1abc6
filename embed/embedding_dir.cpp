// Writing and searching an embedding folder (see embedding_dir.hpp).
#include "embed/embedding_dir.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/atomic_file.hpp"
#include "common/error.hpp"
#include "common/json_fields.hpp"
#include "common/strict_json.hpp"
#include "exec/model/trainable_model.hpp"
#include "text/sha256.hpp"
#include "text/vocab_files.hpp"

namespace fabtrain::embed {
namespace {

// The files of an embedding folder; embed.json, written last, records the others' SHA-256.
const std::vector<std::string> kFiles = {"vectors.npy", "documents.jsonl", "index.faiss",
                                         "embed.json"};

std::string read_whole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: not found (is this a folder written by `fabtrain-exec embed`?)", path);
  std::stringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) fail("{}: read error", path);
  return bytes.str();
}

// The file's bytes when their SHA-256 is the one embed recorded, else an Error naming the file.
std::string read_verified(const std::string& dir, const std::string& name,
                          const nlohmann::json& meta) {
  const std::string path = dir + "/" + name;
  const auto digests = meta.find("sha256");
  if (digests == meta.end() || !digests->is_object() || !digests->contains(name) ||
      !(*digests)[name].is_string())
    fail("{}/embed.json: no SHA-256 of {} (written by an earlier embed?); run embed again", dir,
         name);
  std::string bytes = read_whole(path);
  const std::string digest = text::sha256_hex(bytes);
  if (digest != (*digests)[name].get<std::string>())
    fail(
        "{}: SHA-256 {} differs from the {} embed recorded in embed.json: the file is corrupt or "
        "from another run; run embed again",
        path, digest, (*digests)[name].get<std::string>());
  return bytes;
}

// documents.jsonl: one object per line with the id and the first line of each document, in the
// index's order. Blank lines are skipped (an editor's last newline); any other line is an Error.
std::vector<SearchHit> read_listing(const std::string& bytes, const std::string& path) {
  std::vector<SearchHit> docs;
  std::istringstream in(bytes);
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = fmt::format("line {}", line_no);
    const nlohmann::json j = parse_json_strict(line, fmt::format("{}:{}", path, line_no));
    docs.push_back({0, 0, json_fields::text(j, "id", where, path),
                    json_fields::text(j, "first_line", where, path)});
  }
  return docs;
}

int meta_integer(const nlohmann::json& meta, const std::string& dir, const char* key) {
  return json_fields::integer(meta, key, "embed.json", dir, 0, INT32_MAX);
}

}  // namespace

EmbedSummary embed_documents(const EmbedConfig& c) {
  const auto start = std::chrono::steady_clock::now();
  const Pooling pooling = parse_pooling(c.pooling);
  if (c.checkpoint.empty())
    fail("--checkpoint: required (an llm.c model file, e.g. from train --checkpoint-dir)");
  StagedFolder out(c.output_dir, kFiles, "--output-dir");
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
    if (first_non_finite(e.vector.data(), std::int64_t(e.vector.size())) >= 0)
      fail(
          "{}: the vector of document '{}' is not finite: the checkpoint {} overflows the model's "
          "activations (weights far from a trained model's)",
          doc.line > 0 ? fmt::format("{}:{}", doc.source, doc.line) : doc.source, doc.id,
          c.checkpoint);
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

  Matrix unit = vectors;
  normalize_rows(unit);
  const VectorIndex index(unit, c.index);
  s.index = index.describe();
  const std::map<std::string, std::string> files = {{"vectors.npy", npy_bytes(vectors)},
                                                    {"documents.jsonl", listing},
                                                    {"index.faiss", index.bytes()}};
  nlohmann::json meta = {{"model", c.model},
                         {"checkpoint", std::filesystem::absolute(c.checkpoint).string()},
                         {"pooling", pooling_name(pooling)},
                         {"documents", s.documents},
                         {"dimension", s.dimension},
                         {"index", s.index}};
  for (const auto& [name, bytes] : files) {
    write_text_atomically(out.path(name), bytes, name);
    meta["sha256"][name] = text::sha256_hex(bytes);
  }
  write_text_atomically(out.path("embed.json"), meta.dump(2) + "\n", "embed.json");
  out.commit();
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return s;
}

EmbeddingFolder read_embedding_folder(const std::string& dir) {
  const nlohmann::json meta =
      parse_json_strict(read_whole(dir + "/embed.json"), dir + "/embed.json");
  EmbeddingFolder f;
  f.model = json_fields::text(meta, "model", "embed.json", dir);
  f.checkpoint = json_fields::text(meta, "checkpoint", "embed.json", dir);
  f.pooling = json_fields::text(meta, "pooling", "embed.json", dir);
  f.documents = read_listing(read_verified(dir, "documents.jsonl", meta), dir + "/documents.jsonl");
  f.vectors = parse_npy(read_verified(dir, "vectors.npy", meta), dir + "/vectors.npy");
  require_finite(f.vectors, dir + "/vectors.npy");
  f.index =
      std::make_unique<VectorIndex>(read_verified(dir, "index.faiss", meta), dir + "/index.faiss");
  const std::int64_t n = meta_integer(meta, dir, "documents");
  f.dimension = meta_integer(meta, dir, "dimension");
  if (std::int64_t(f.documents.size()) != n || f.vectors.rows != n || f.index->size() != n)
    fail(
        "{}: embed.json lists {} documents; documents.jsonl holds {}, vectors.npy {}, "
        "index.faiss {}",
        dir, n, f.documents.size(), f.vectors.rows, f.index->size());
  if (f.vectors.cols != f.dimension || f.index->dimension() != f.dimension)
    fail("{}: embed.json says {} dimensions; vectors.npy holds {}, index.faiss {}", dir,
         f.dimension, f.vectors.cols, f.index->dimension());
  return f;
}

FolderSearch::FolderSearch(const std::string& dir, const std::string& vocab)
    : dir_(dir), folder_(read_embedding_folder(dir)) {
  const ModelSpec model = load_model(folder_.model);
  if (folder_.dimension != model.n_embd)
    fail("{}: model {} embeds in {} dimensions; embed.json says {}", dir, model.name, model.n_embd,
         folder_.dimension);
  bpe_ = std::make_unique<text::Gpt2Bpe>(text::load_gpt2_bpe(vocab));
  embedder_ = std::make_unique<Embedder>(model, folder_.checkpoint, *bpe_);
}

std::vector<SearchHit> FolderSearch::search(const std::string& query, int k) {
  if (query.empty()) fail("search: the query is empty");
  if (k <= 0) fail("-k={} must be positive", k);
  const std::int64_t n = std::int64_t(folder_.documents.size());
  Matrix q;
  q.rows = 1;
  q.data = embedder_->embed(query, parse_pooling(folder_.pooling)).vector;
  q.cols = std::int64_t(q.data.size());
  if (first_non_finite(q.data.data(), q.cols) >= 0)
    fail(
        "search: the query's vector is not finite: the checkpoint {} overflows the model's "
        "activations (weights far from a trained model's)",
        folder_.checkpoint);
  normalize_rows(q);
  std::vector<SearchHit> hits;
  for (const Hit& h : folder_.index->search(q.data, k)) {
    if (h.row < 0 || h.row >= n)
      fail(
          "{}/index.faiss: a hit names row {}, outside the {} documents: the index is corrupt; "
          "run embed again",
          dir_, h.row, n);
    SearchHit hit = folder_.documents[std::size_t(h.row)];
    hit.rank = int(hits.size()) + 1;
    hit.score = h.score;
    hits.push_back(hit);
  }
  return hits;
}

std::vector<SearchHit> search_documents(const std::string& query, const std::string& dir, int k,
                                        const std::string& vocab) {
  if (query.empty()) fail("search: the query is empty");
  if (k <= 0) fail("-k={} must be positive", k);
  return FolderSearch(dir, vocab).search(query, k);
}

}  // namespace fabtrain::embed
