// FAISS flat / IVF inner-product indexes over normalised vectors (see vector_index.hpp).
#include "embed/vector_index.hpp"

#include <faiss/IndexFlat.h>
#include <faiss/IndexIVFFlat.h>
#include <faiss/impl/io.h>
#include <faiss/index_io.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "common/atomic_file.hpp"
#include "common/error.hpp"
#include "embed/faiss_layout.hpp"

namespace fabtrain::embed {
namespace {

std::string read_index_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: no index (build one with `fabtrain-exec embed`)", path);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

}  // namespace

void normalize_rows(Matrix& m) {
  for (std::int64_t r = 0; r < m.rows; ++r) {
    float* v = m.data.data() + r * m.cols;
    double norm = 0;
    for (std::int64_t c = 0; c < m.cols; ++c) norm += double(v[c]) * v[c];
    if (norm == 0) continue;
    const float inv = float(1.0 / std::sqrt(norm));
    for (std::int64_t c = 0; c < m.cols; ++c) v[c] *= inv;
  }
}

VectorIndex::VectorIndex(const Matrix& unit, const IndexOptions& o) {
  if (unit.rows == 0) fail("no vectors to index");
  const int d = int(unit.cols);
  if (unit.rows <= o.flat_max) {
    index_ = std::make_unique<faiss::IndexFlatIP>(d);
  } else {
    const auto n = double(unit.rows);
    int nlist =
        o.nlist > 0 ? o.nlist : int(std::clamp(4 * std::sqrt(n), 1.0, std::max(1.0, n / 39)));
    nlist = int(std::min<std::int64_t>(nlist, unit.rows));
    auto ivf = std::make_unique<faiss::IndexIVFFlat>(
        new faiss::IndexFlatIP(d), d, std::size_t(nlist), faiss::METRIC_INNER_PRODUCT);
    ivf->own_fields = true;  // the quantizer goes with the index
    ivf->nprobe = std::size_t(o.nprobe > 0 ? std::min(o.nprobe, nlist)
                                           : std::min(nlist, std::max(8, nlist / 8)));
    ivf->train(unit.rows, unit.data.data());
    index_ = std::move(ivf);
  }
  index_->add(unit.rows, unit.data.data());
  check_vectors("the index being built");
}

VectorIndex::VectorIndex(const std::string& path) : VectorIndex(read_index_file(path), path) {}

VectorIndex::VectorIndex(const std::string& bytes, const std::string& path) {
  check_faiss_layout(bytes, path);  // FAISS trusts the sizes it reads
  faiss::VectorIOReader reader;
  reader.data.assign(bytes.begin(), bytes.end());
  try {
    index_.reset(faiss::read_index(&reader));
  } catch (const std::exception& e) {
    fail("{}: not a FAISS index ({})", path, e.what());
  }
  check_inverted_lists(path);
  check_vectors(path);
}

// Every id of an inverted file names one of its vectors, once: search returns them as rows.
void VectorIndex::check_inverted_lists(const std::string& path) const {
  const auto* ivf = dynamic_cast<const faiss::IndexIVFFlat*>(index_.get());
  if (!ivf) return;
  std::vector<bool> seen(std::size_t(ivf->ntotal), false);
  std::int64_t total = 0;
  for (std::size_t list = 0; list < ivf->nlist; ++list) {
    const std::size_t n = ivf->invlists->list_size(list);
    const faiss::Index::idx_t* ids = ivf->invlists->get_ids(list);
    for (std::size_t i = 0; i < n; ++i) {
      if (ids[i] < 0 || ids[i] >= ivf->ntotal || seen[std::size_t(ids[i])])
        fail("{}: list {} holds id {}, outside the {} vectors or twice: the index is corrupt", path,
             list, ids[i], ivf->ntotal);
      seen[std::size_t(ids[i])] = true;
    }
    ivf->invlists->release_ids(list, ids);
    total += std::int64_t(n);
  }
  if (total != ivf->ntotal)
    fail("{}: the lists hold {} vectors, the index says {}: the index is corrupt", path, total,
         ivf->ntotal);
}

// Each stored vector must be finite and of unit length (or zero, a document without tokens'
// vector): only then is an inner product a cosine in [-1, 1], never NaN or infinite.
static void check_unit(const float* v, int d, std::int64_t row, const std::string& path) {
  if (const std::int64_t c = first_non_finite(v, d); c >= 0)
    fail("{}: the vector of row {} holds {} at dimension {}: the index is corrupt; run embed again",
         path, row, v[c], c);
  double norm = 0;
  for (int c = 0; c < d; ++c) norm += double(v[c]) * v[c];
  if (norm != 0 && std::abs(std::sqrt(norm) - 1) > kUnitTolerance)
    fail(
        "{}: the vector of row {} has length {:.6g}, not 1 (the index holds unit vectors): the "
        "index is corrupt; run embed again",
        path, row, std::sqrt(norm));
}

void VectorIndex::check_vectors(const std::string& path) const {
  const int d = index_->d;
  if (const auto* flat = dynamic_cast<const faiss::IndexFlat*>(index_.get())) {
    for (std::int64_t r = 0; r < flat->ntotal; ++r) check_unit(flat->get_xb() + r * d, d, r, path);
    return;
  }
  const auto* ivf = dynamic_cast<const faiss::IndexIVFFlat*>(index_.get());
  if (!ivf) return;
  const auto* centroids = dynamic_cast<const faiss::IndexFlat*>(ivf->quantizer);
  if (centroids && first_non_finite(centroids->get_xb(), centroids->ntotal * d) >= 0)
    fail("{}: a cluster centroid is not finite: the index is corrupt; run embed again", path);
  for (std::size_t list = 0; list < ivf->nlist; ++list) {
    const std::size_t n = ivf->invlists->list_size(list);
    const faiss::Index::idx_t* ids = ivf->invlists->get_ids(list);
    const auto* codes = reinterpret_cast<const float*>(ivf->invlists->get_codes(list));
    for (std::size_t i = 0; i < n; ++i) check_unit(codes + i * std::size_t(d), d, ids[i], path);
    ivf->invlists->release_codes(list, reinterpret_cast<const std::uint8_t*>(codes));
    ivf->invlists->release_ids(list, ids);
  }
}

VectorIndex::~VectorIndex() = default;

void VectorIndex::save(const std::string& path) const {
  write_text_atomically(path, bytes(), "index");
}

std::string VectorIndex::bytes() const {
  faiss::VectorIOWriter writer;
  faiss::write_index(index_.get(), &writer);
  return {writer.data.begin(), writer.data.end()};
}

std::vector<Hit> VectorIndex::search(const std::vector<float>& query, int k) const {
  if (int(query.size()) != dimension())
    fail("query of {} dimensions, the index holds {}", query.size(), dimension());
  if (first_non_finite(query.data(), std::int64_t(query.size())) >= 0)
    fail("the query's vector is not finite");
  k = int(std::min<std::int64_t>(k, size()));
  std::vector<float> scores(std::size_t(std::max(k, 0)));
  std::vector<faiss::Index::idx_t> rows(std::size_t(std::max(k, 0)));
  if (k > 0) index_->search(1, query.data(), k, scores.data(), rows.data());
  std::vector<Hit> hits;
  for (int i = 0; i < k; ++i)
    if (rows[std::size_t(i)] >= 0) hits.push_back({rows[std::size_t(i)], scores[std::size_t(i)]});
  return hits;
}

std::string VectorIndex::describe() const {
  if (auto* ivf = dynamic_cast<const faiss::IndexIVFFlat*>(index_.get()))
    return fmt::format("IVF, {} lists (nprobe {}), {} vectors", ivf->nlist, ivf->nprobe,
                       ivf->ntotal);
  return fmt::format("flat, {} vectors", index_->ntotal);
}

std::int64_t VectorIndex::size() const { return index_->ntotal; }
int VectorIndex::dimension() const { return index_->d; }

}  // namespace fabtrain::embed
