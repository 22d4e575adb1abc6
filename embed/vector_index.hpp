// The FAISS index of a set of embeddings, for cosine similarity: vectors normalised to unit
// length in an inner-product index. A flat (exact) index up to flat_max vectors, an inverted-
// file index (IndexIVFFlat: nlist clusters, nprobe of them searched per query) above it.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "embed/npy.hpp"

namespace faiss {
struct Index;
}

namespace fabtrain::embed {

// How far from 1 a stored vector's length may be: a normalised float vector of GPT-2 XL's 1600
// dimensions is within about 1e-6 of it.
inline constexpr double kUnitTolerance = 1e-3;

// Scales every row to unit length (a zero row stays zero).
void normalize_rows(Matrix& m);

struct IndexOptions {
  std::int64_t flat_max = 100'000;
  int nlist = 0;   // IVF clusters; 0: about 4 sqrt(n), at most n / 39 (FAISS's points per cluster)
  int nprobe = 0;  // IVF clusters searched; 0: an eighth of nlist, at least 8 (all when fewer)
};

struct Hit {
  std::int64_t row;
  float score;  // cosine similarity
};

class VectorIndex {
 public:
  // Builds the index of the rows of `unit` (normalised).
  VectorIndex(const Matrix& unit, const IndexOptions& options);
  // Reads an index written by save() (or serialized by bytes()); `path` names it in messages.
  explicit VectorIndex(const std::string& path);
  VectorIndex(const std::string& bytes, const std::string& path);
  ~VectorIndex();
  void save(const std::string& path) const;  // temporary + rename, every write error an Error
  std::string bytes() const;                 // the index as save() writes it

  // The k rows most similar to the unit vector query, best first.
  std::vector<Hit> search(const std::vector<float>& query, int k) const;
  std::string describe() const;  // "flat, 12 vectors" or "IVF 64 lists (nprobe 8), 10000 vectors"
  std::int64_t size() const;
  int dimension() const;

 private:
  void check_inverted_lists(const std::string& path) const;
  void check_vectors(const std::string& path) const;  // finite, unit length (or zero)
  std::unique_ptr<faiss::Index> index_;
};

}  // namespace fabtrain::embed
