// The FAISS index against brute force: its top-k by cosine equals a plain loop's, flat and IVF
// (searching every list); .npy files round-trip; a query equal to a document finds it first.
#include <doctest/doctest.h>
#include <faiss/IndexFlat.h>
#include <faiss/IndexIDMap.h>
#include <faiss/IndexIVFFlat.h>
#include <faiss/impl/io.h>
#include <faiss/index_io.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>

#include "common/data_dir.hpp"
#include "embed/embedding_dir.hpp"
#include "exec/model/gpt2_stage.hpp"
#include "exec/model/model_file.hpp"
#include "tests/test_support.hpp"
#include "tests/text/text_test_support.hpp"
#include "text/sha256.hpp"

namespace fabtrain {
namespace {

embed::Matrix random_matrix(std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  embed::Matrix m;
  m.rows = rows, m.cols = cols;
  std::uint64_t x = seed;
  for (std::int64_t i = 0; i < rows * cols; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    m.data.push_back(float(double(x % 20001) / 10000.0 - 1.0));
  }
  return m;
}

// The k rows of largest cosine with q, by computing every one.
std::vector<std::int64_t> brute_force(const embed::Matrix& vectors, const std::vector<float>& q,
                                      int k) {
  std::vector<std::pair<double, std::int64_t>> all;
  for (std::int64_t r = 0; r < vectors.rows; ++r) {
    double dot = 0, nv = 0, nq = 0;
    for (std::int64_t c = 0; c < vectors.cols; ++c) {
      dot += double(vectors.row(r)[c]) * q[std::size_t(c)];
      nv += double(vectors.row(r)[c]) * vectors.row(r)[c];
      nq += double(q[std::size_t(c)]) * q[std::size_t(c)];
    }
    all.push_back({-dot / std::sqrt(nv * nq), r});
  }
  std::sort(all.begin(), all.end());
  std::vector<std::int64_t> rows;
  for (int i = 0; i < k; ++i) rows.push_back(all[std::size_t(i)].second);
  return rows;
}

TEST_CASE("FAISS top-k equals brute-force cosine top-k, flat and IVF") {
  const embed::Matrix vectors = random_matrix(600, 24, 42);
  embed::Matrix unit = vectors;
  embed::normalize_rows(unit);
  const embed::Matrix queries = random_matrix(20, 24, 7);
  for (const bool ivf : {false, true}) {
    embed::IndexOptions o;
    if (ivf) o.flat_max = 100, o.nlist = 10, o.nprobe = 10;  // every list searched: exact
    const embed::VectorIndex index(unit, o);
    INFO(index.describe());
    CHECK(index.describe().rfind(ivf ? "IVF" : "flat", 0) == 0);
    for (std::int64_t qi = 0; qi < queries.rows; ++qi) {
      embed::Matrix q;
      q.rows = 1, q.cols = queries.cols;
      q.data.assign(queries.row(qi), queries.row(qi) + queries.cols);
      const std::vector<std::int64_t> want = brute_force(vectors, q.data, 10);
      embed::normalize_rows(q);
      std::vector<std::int64_t> got;
      for (const auto& h : index.search(q.data, 10)) got.push_back(h.row);
      CHECK(got == want);
    }
  }
}

TEST_CASE("an index and a .npy file read back as written") {
  test::TempDir dir("fabtrain-index");
  embed::Matrix m = random_matrix(5, 3, 9);
  embed::write_npy((dir.path() / "v.npy").string(), m);
  const embed::Matrix back = embed::read_npy((dir.path() / "v.npy").string());
  CHECK(back.rows == 5);
  CHECK(back.cols == 3);
  CHECK(back.data == m.data);
  embed::normalize_rows(m);
  embed::VectorIndex(m, {}).save((dir.path() / "i.faiss").string());
  const embed::VectorIndex loaded((dir.path() / "i.faiss").string());
  CHECK(loaded.size() == 5);
  CHECK(loaded.search(std::vector<float>(m.row(3), m.row(3) + 3), 1).at(0).row == 3);
}

// An embedding folder of the 80 paragraphs of tiny_prose_docs.jsonl under `dir`/emb.
embed::EmbedConfig embed_prose(const test::TempDir& dir, const embed::IndexOptions& index = {}) {
  const ModelSpec model = load_model(source_dir() + "/data/gpt2-bpe-mini/config.json");
  const std::string ckpt = (dir.path() / "model.bin").string();
  write_model_checkpoint(ckpt, model, init_full_parameters(model, 3));
  embed::EmbedConfig c;
  c.inputs = {source_dir() + "/data/tiny_prose_docs.jsonl"};
  c.model = source_dir() + "/data/gpt2-bpe-mini/config.json";
  c.checkpoint = ckpt;
  c.output_dir = (dir.path() / "emb").string();
  c.index = index;
  return c;
}

TEST_CASE("search: a query equal to a document's text finds that document first") {
  const text::Gpt2Bpe* bpe = test::gpt2_bpe_or_skip();
  if (!bpe) return;
  test::TempDir dir("fabtrain-embed");
  const embed::EmbedConfig c = embed_prose(dir);
  const embed::EmbedSummary s = embed::embed_documents(c);
  REQUIRE(s.documents == 80);
  CHECK(s.chunked > 0);  // some paragraphs exceed the 128-token context
  std::ifstream docs(c.inputs[0]);
  std::string line;
  for (int i = 0; std::getline(docs, line); ++i) {
    if (i % 20 != 3) continue;  // four of them, long and short
    const auto doc = nlohmann::json::parse(line);
    const auto hits = embed::search_documents(doc["text"], c.output_dir, 3);
    REQUIRE(hits.size() == 3);
    CHECK(hits[0].id == doc["id"]);
    CHECK(hits[0].score == doctest::Approx(1.0).epsilon(1e-5));
    CHECK(hits[1].score < hits[0].score);
  }
}

// Writes `text` as the folder's file `name` and records its SHA-256 in embed.json, as an editor
// who knows the format would: the checks after the checksum are reached.
void rewrite(const std::string& dir, const std::string& name, const std::string& text) {
  std::ofstream(dir + "/" + name, std::ios::binary) << text;
  nlohmann::json meta = nlohmann::json::parse(test::text_of(dir + "/embed.json"));
  meta["sha256"][name] = text::sha256_hex(text);
  std::ofstream(dir + "/embed.json") << meta.dump(2);
}

TEST_CASE("search: an edited, corrupt or mismatched folder is refused by name, never read blind") {
  if (!test::gpt2_bpe_or_skip()) return;
  test::TempDir dir("fabtrain-embed");
  const embed::EmbedConfig c = embed_prose(dir);
  embed::embed_documents(c);
  const std::string out = c.output_dir;
  const std::string listing = test::text_of(out + "/documents.jsonl");
  const std::string index = test::text_of(out + "/index.faiss");
  const std::string vectors = test::text_of(out + "/vectors.npy");
  const std::string meta = test::text_of(out + "/embed.json");
  auto search_error = [&] {
    return test::error_of([&] { embed::search_documents("fox", out, 3); });
  };
  auto flipped = [](std::string bytes, std::size_t at) {
    bytes[at] = char(bytes[at] ^ 0x40);
    return bytes;
  };

  std::ofstream(out + "/documents.jsonl") << "\n" << listing;
  CHECK(test::contains(search_error(), "documents.jsonl: SHA-256"));
  rewrite(out, "documents.jsonl", "\n" + listing + "\n");
  CHECK(embed::search_documents("fox", out, 3).size() == 3);  // blank lines are skipped
  rewrite(out, "documents.jsonl", "{\"id\": \"x\"}\n" + listing);
  CHECK(test::contains(search_error(), "documents.jsonl: line 1 has no field 'first_line'"));
  rewrite(out, "documents.jsonl", "[[[\n" + listing);
  CHECK(test::contains(search_error(), "documents.jsonl:1: not valid JSON"));
  rewrite(out, "documents.jsonl", listing.substr(listing.find('\n') + 1));
  CHECK(test::contains(search_error(),
                       "embed.json lists 80 documents; documents.jsonl holds 79, vectors.npy 80"));
  rewrite(out, "documents.jsonl", listing);

  std::ofstream(out + "/index.faiss", std::ios::binary) << flipped(index, index.size() / 2);
  CHECK(test::contains(search_error(), "index.faiss: SHA-256"));
  rewrite(out, "index.faiss", index.substr(0, 40));
  CHECK(test::contains(search_error(), "index.faiss: ends inside the vectors' size"));
  rewrite(out, "index.faiss", index);
  std::ofstream(out + "/vectors.npy", std::ios::binary) << flipped(vectors, 80);
  CHECK(test::contains(search_error(), "vectors.npy: SHA-256"));
  rewrite(out, "vectors.npy", vectors.substr(0, vectors.size() - 4));
  CHECK(test::contains(search_error(), "vectors.npy: the header announces 80 x 64 floats"));
  rewrite(out, "vectors.npy", vectors);
  CHECK(embed::search_documents("fox", out, 3).size() == 3);

  std::ofstream(out + "/embed.json") << test::replaced_first(meta, "\"sha256\"", "\"sums\"");
  CHECK(test::contains(search_error(), "embed.json: no SHA-256 of documents.jsonl"));
}

// An index of another kind (here FAISS's id map, whose ids lie outside the documents) is refused
// by its kind before FAISS reads it; an inverted file whose ids lie outside is refused once read.
TEST_CASE("search: an index of another kind, or whose ids lie outside the documents, is refused") {
  if (!test::gpt2_bpe_or_skip()) return;
  test::TempDir dir("fabtrain-embed");
  const embed::EmbedConfig c = embed_prose(dir);
  embed::embed_documents(c);
  embed::Matrix unit = embed::read_npy(c.output_dir + "/vectors.npy");
  embed::normalize_rows(unit);
  faiss::IndexFlatIP flat(int(unit.cols));
  faiss::IndexIDMap shifted(&flat);
  std::vector<faiss::Index::idx_t> ids;
  for (std::int64_t i = 0; i < unit.rows; ++i) ids.push_back(1000 + i);
  shifted.add_with_ids(unit.rows, unit.data.data(), ids.data());
  faiss::VectorIOWriter writer;
  faiss::write_index(&shifted, &writer);
  rewrite(c.output_dir, "index.faiss", std::string(writer.data.begin(), writer.data.end()));
  CHECK(test::contains(test::error_of([&] { embed::search_documents("fox", c.output_dir, 3); }),
                       "index.faiss: index kind 'IxMp'"));
}

// The byte layout is checked before FAISS reads a file (FAISS trusts the sizes it reads): every
// corruption the fuzzer keeps, and every single flipped byte of a flat and an inverted-file
// index, is refused with fabtrain's error or read as a consistent index.
TEST_CASE("index files with corrupt sizes, kinds or ids are refused before FAISS reads them") {
  const std::string kept = source_dir() + "/tests/fuzz/regressions/vector_index/";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"flat-terabyte-vectors.faiss", "the vectors hold 549755813888 floats, not 3 x 4"},
      {"flat-negative-dimension.faiss", "dimension -3 outside [1, 65536]"},
      {"ivf-nlist-huge.faiss", "nlist 1152921504606846976"},
      {"ivf-ntotal-huge.faiss", "the lists hold 400 vectors, the header 4611686018427387904"},
      {"ivf-cut.faiss", "ivf-cut.faiss: "},
      {"ivf-id-outside.faiss", "holds id 1000000, outside the 400 vectors"},
      {"ivf-id-negative.faiss", "holds id -5, outside the 400 vectors"}};
  for (const auto& one : cases) {
    const std::string& file = one.first;  // a named reference: lambdas may not capture bindings
    const std::string& expected = one.second;
    CAPTURE(file);
    std::ifstream in(kept + file, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(test::contains(test::error_of([&] { embed::VectorIndex(bytes, file); }), expected));
  }
  embed::IndexOptions ivf_options;
  ivf_options.flat_max = 10;
  ivf_options.nlist = 4;
  for (const auto& options : {embed::IndexOptions{}, ivf_options}) {
    embed::Matrix unit = random_matrix(40, 8, 3);
    embed::normalize_rows(unit);
    const std::string bytes = embed::VectorIndex(unit, options).bytes();
    int read = 0;
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      std::string flipped = bytes;
      flipped[i] = char(flipped[i] ^ 0x55);
      try {
        const embed::VectorIndex index(flipped, "index.faiss");
        for (const embed::Hit& h : index.search(std::vector<float>(8, 0.35f), 5))
          CHECK((h.row >= 0 && h.row < index.size()));
        ++read;
      } catch (const Error&) {
      }
    }
    CHECK(read < int(bytes.size()));  // the sizes' bytes at least are refused
  }
}

// A folder as embed writes it, of these vectors (rows named doc-0, doc-1, ...) and index bytes,
// with their SHA-256 in embed.json: the checks behind the checksums are reached.
void write_folder(const std::string& dir, const embed::Matrix& vectors, const std::string& index) {
  std::filesystem::create_directories(dir);
  std::string listing;
  for (std::int64_t r = 0; r < vectors.rows; ++r)
    listing +=
        nlohmann::json{{"id", fmt::format("doc-{}", r)}, {"first_line", "text"}}.dump() + "\n";
  const std::map<std::string, std::string> files = {{"vectors.npy", embed::npy_bytes(vectors)},
                                                    {"documents.jsonl", listing},
                                                    {"index.faiss", index}};
  nlohmann::json meta = {{"model", "gpt2"},
                         {"checkpoint", "model.bin"},
                         {"pooling", "mean"},
                         {"documents", vectors.rows},
                         {"dimension", vectors.cols}};
  for (const auto& [name, bytes] : files) {
    std::ofstream(dir + "/" + name, std::ios::binary) << bytes;
    meta["sha256"][name] = text::sha256_hex(bytes);
  }
  std::ofstream(dir + "/embed.json") << meta.dump(2);
}

// The bytes of a float in a flat index's vectors (they end the file, row after row).
void set_flat_value(std::string& index, std::int64_t rows, std::int64_t cols, std::int64_t row,
                    std::int64_t col, float value) {
  const std::size_t at = index.size() - std::size_t(rows * cols - (row * cols + col)) * 4;
  std::memcpy(index.data() + at, &value, sizeof value);
}

TEST_CASE("vectors that are not finite, in vectors.npy or the index, are refused by file and row") {
  test::TempDir dir("fabtrain-embed");
  const std::string out = (dir.path() / "emb").string();
  embed::Matrix vectors = random_matrix(6, 4, 11);
  embed::Matrix unit = vectors;
  embed::normalize_rows(unit);
  const std::string index = embed::VectorIndex(unit, {}).bytes();
  write_folder(out, vectors, index);
  CHECK(embed::read_embedding_folder(out).documents.size() == 6);

  embed::Matrix nan = vectors;
  nan.data[4 * 3 + 2] = std::nanf("");
  write_folder(out, nan, index);
  CHECK(test::contains(test::error_of([&] { embed::read_embedding_folder(out); }),
                       "emb/vectors.npy: row 3 holds nan in column 2"));

  std::string bad = index;
  set_flat_value(bad, 6, 4, 2, 1, INFINITY);
  write_folder(out, vectors, bad);
  CHECK(test::contains(test::error_of([&] { embed::read_embedding_folder(out); }),
                       "emb/index.faiss: the vector of row 2 holds inf at dimension 1"));
  bad = index;
  set_flat_value(bad, 6, 4, 5, 0, 3e38f);  // finite, but its inner products overflow
  CHECK(test::contains(test::error_of([&] { embed::VectorIndex(bad, "index.faiss"); }),
                       "index.faiss: the vector of row 5 has length 3e+38, not 1"));

  // An inverted file of vectors that were never normalised: its scores would not be cosines.
  const embed::Matrix long_rows = random_matrix(200, 4, 5);
  faiss::IndexFlatIP quantizer(4);
  faiss::IndexIVFFlat ivf(&quantizer, 4, 4, faiss::METRIC_INNER_PRODUCT);
  ivf.train(long_rows.rows, long_rows.data.data());
  ivf.add(long_rows.rows, long_rows.data.data());
  faiss::VectorIOWriter writer;
  faiss::write_index(&ivf, &writer);
  CHECK(test::contains(test::error_of([&] {
                         embed::VectorIndex(std::string(writer.data.begin(), writer.data.end()),
                                            "ivf.faiss");
                       }),
                       "(the index holds unit vectors)"));

  const embed::VectorIndex good(index, "index.faiss");
  CHECK(test::contains(test::error_of([&] {
                         good.search({1.0f, std::nanf(""), 0.0f, 0.0f}, 3);
                       }),
                       "the query's vector is not finite"));
  for (const embed::Hit& h : good.search({0.5f, 0.5f, 0.5f, 0.5f}, 6))
    CHECK(std::isfinite(h.score));
}

TEST_CASE("embed: an earlier folder is replaced as a whole, a folder of other files refused") {
  if (!test::gpt2_bpe_or_skip()) return;
  test::TempDir dir("fabtrain-embed");
  embed::EmbedConfig c = embed_prose(dir);
  embed::embed_documents(c);
  const std::string first = test::text_of(c.output_dir + "/embed.json");
  c.inputs = {source_dir() + "/data/tiny_prose_train.txt"};
  c.checkpoint = (dir.path() / "absent.bin").string();  // fails after the folder was checked
  CHECK(!test::error_of([&] { embed::embed_documents(c); }).empty());
  CHECK(test::text_of(c.output_dir + "/embed.json") == first);  // a failed run changes nothing
  c.checkpoint = (dir.path() / "model.bin").string();
  CHECK(embed::embed_documents(c).documents == 1);
  CHECK(embed::search_documents("fox", c.output_dir, 3).size() == 1);
  // model.bin, emb/ and the folder's lock file beside it (kept: see common/file_lock.hpp)
  CHECK(std::distance(std::filesystem::directory_iterator(dir.path()),
                      std::filesystem::directory_iterator{}) == 3);
  std::ofstream(c.output_dir + "/notes.txt") << "mine";
  CHECK(test::contains(test::error_of([&] { embed::embed_documents(c); }),
                       "holds notes.txt, which is not one of its outputs"));
}

TEST_CASE(
    "embed: a disk that fills while index.faiss is written leaves the earlier folder as it was") {
  if (!test::gpt2_bpe_or_skip()) return;
  test::TempDir dir("fabtrain-embed");
  embed::EmbedConfig c = embed_prose(dir);
  embed::embed_documents(c);
  const std::string first = test::text_of(c.output_dir + "/embed.json");
  const auto documents_bytes = std::filesystem::file_size(c.output_dir + "/documents.jsonl");
  const auto index_bytes = std::filesystem::file_size(c.output_dir + "/index.faiss");
  REQUIRE(documents_bytes < index_bytes);  // documents.jsonl is written whole, index.faiss not
  c.checkpoint = (dir.path() / "other.bin").string();
  const ModelSpec model = load_model(c.model);
  write_model_checkpoint(c.checkpoint, model, init_full_parameters(model, 4));
  std::string message;
  {
    const test::FileSizeCap full_disk((documents_bytes + index_bytes) / 2);
    message = test::error_of([&] { embed::embed_documents(c); });
  }
  CHECK(test::contains(message, "/index.faiss: write failed after"));
  CHECK(test::text_of(c.output_dir + "/embed.json") == first);
  CHECK(embed::search_documents("fox", c.output_dir, 3).size() == 3);  // the old folder, whole
  std::vector<std::string> left;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
    left.push_back(entry.path().filename().string());
  std::sort(left.begin(), left.end());
  // No staging folder; the lock file stays beside the folder.
  CHECK(left == std::vector<std::string>{"emb", "emb.lock", "model.bin", "other.bin"});
}

TEST_CASE("embed: a JSONL line whose id nests past the limit is refused with its file and line") {
  if (!test::gpt2_bpe_or_skip()) return;
  test::TempDir dir("fabtrain-embed");
  embed::EmbedConfig c = embed_prose(dir);
  const std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
  c.inputs = {
      dir.write("docs.jsonl", "{\"text\": \"fine\"}\n{\"text\": \"x\", \"id\": " + deep + "}\n")};
  CHECK(
      test::contains(test::error_of([&] { embed::embed_documents(c); }),
                     "docs.jsonl:2: the JSON nesting depth is 257; fabtrain handles at most 256"));
  CHECK(!std::filesystem::exists(c.output_dir));
}

TEST_CASE(".npy headers that disagree with the data are refused, never allocated") {
  const std::string good = embed::npy_bytes(random_matrix(5, 3, 9));
  CHECK(embed::parse_npy(good, "v.npy").rows == 5);
  const std::string huge = test::replaced_first(good, "(5, 3)", "(999999999999999999, 9999)");
  CHECK(test::contains(test::error_of([&] { embed::parse_npy(huge, "v.npy"); }),
                       "v.npy: the header announces 999999999999999999 x 9999 floats"));
  CHECK(test::contains(test::error_of([&] { embed::parse_npy(good.substr(0, 12), "v.npy"); }),
                       "header cut short"));
}

TEST_CASE("embed: a checkpoint whose weights overflow the activations is refused by name") {
  if (!test::gpt2_bpe_or_skip()) return;
  test::TempDir dir("fabtrain-embed");
  embed::EmbedConfig c = embed_prose(dir);
  const ModelSpec model = load_model(c.model);
  std::vector<float> huge = init_full_parameters(model, 3);
  for (float& w : huge) w = 1e30f;
  write_model_checkpoint(c.checkpoint, model, huge);
  CHECK(test::contains(test::error_of([&] { embed::embed_documents(c); }),
                       "tiny_prose_docs.jsonl:1: the vector of document"));
  CHECK(!std::filesystem::exists(c.output_dir));
}

}  // namespace
}  // namespace fabtrain
