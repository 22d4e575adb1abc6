// `fabtrain-exec embed` and `search` as functions: the folder embed writes and search reads.
//   vectors.npy     float32 (documents, C), the pooled vectors, not normalised
//   documents.jsonl one line per row: id, first line of the text, tokens, chunks
//   index.faiss     the FAISS index of the normalised vectors (vector_index.hpp)
//   embed.json      model, checkpoint, pooling and vocabulary, so search embeds a query the same
//                   way, and the SHA-256 of the other three files
// The folder is written whole under a staging name and replaces an earlier one as a whole (a
// folder holding other files is refused). search verifies every file against embed.json and
// their sizes against each other before it reads one, and refuses vectors that are not finite;
// documents.jsonl's blank lines are skipped.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "embed/embedder.hpp"
#include "embed/vector_index.hpp"
#include "text/documents.hpp"

namespace fabtrain::embed {

struct EmbedConfig {
  std::vector<std::string> inputs;
  std::string model = "gpt2";
  std::string checkpoint;
  std::string output_dir = "embeddings";
  std::string pooling = "mean";
  text::DocumentFields fields;
  IndexOptions index;
  std::string vocab;
};

struct EmbedSummary {
  std::int64_t documents = 0, chunked = 0, tokens = 0;
  int dimension = 0, context = 0;
  double seconds = 0;
  std::string index;  // VectorIndex::describe()
};

EmbedSummary embed_documents(const EmbedConfig& config);

struct SearchHit {
  int rank;
  float score;
  std::string id, first_line;
};

// An embedding folder as search reads it, without the model: every file verified against
// embed.json's SHA-256, the counts and dimensions of the three others equal to embed.json's, and
// every vector finite; else an Error naming the file (and the row or line).
struct EmbeddingFolder {
  std::string model, checkpoint, pooling;  // as embed.json records them
  std::int64_t dimension = 0;
  std::vector<SearchHit> documents;  // id and first line; rank and score unset
  Matrix vectors;
  std::unique_ptr<VectorIndex> index;
};
EmbeddingFolder read_embedding_folder(const std::string& dir);

// An embedding folder opened for searching: read and verified once, with the model and
// checkpoint embed.json names, so that many queries embed the way its documents were.
class FolderSearch {
 public:
  explicit FolderSearch(const std::string& dir, const std::string& vocab = "");
  // The k documents most similar to the query text, best first.
  std::vector<SearchHit> search(const std::string& query, int k);
  const EmbeddingFolder& folder() const { return folder_; }

 private:
  std::string dir_;
  EmbeddingFolder folder_;
  std::unique_ptr<text::Gpt2Bpe> bpe_;  // the embedder keeps a reference to it
  std::unique_ptr<Embedder> embedder_;
};

// The k documents of the folder most similar to the query text.
std::vector<SearchHit> search_documents(const std::string& query, const std::string& dir, int k,
                                        const std::string& vocab = "");

}  // namespace fabtrain::embed
