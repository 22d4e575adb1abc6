// tokenize: llm.c shards with the end-of-text token before every document, the validation split,
// shard sizes, one big document cut for the threads giving the same tokens as a single pass,
// and bad input named by file and line with nothing in the output folder changed.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <fstream>
#include <sstream>

#include "exec/run/data_loader.hpp"
#include "tests/test_support.hpp"
#include "tests/text/text_test_support.hpp"
#include "text/pretokenize.hpp"
#include "text/shard_writer.hpp"
#include "text/tokenize_corpus.hpp"

namespace fabtrain {
namespace {

std::vector<int> shard_tokens(const std::string& path) {
  TokenFile f(path);
  REQUIRE(f.format() == DataFormat::llmc_tokens);
  std::vector<int> out;
  for (std::int64_t i = 0; i < f.tokens(); ++i) out.push_back(f.token(i));
  return out;
}

std::vector<std::string> listing(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (auto& e : std::filesystem::directory_iterator(dir))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST_CASE("tokenize writes llm.c shards: EOT before each document, validation split, shard size") {
  const text::Gpt2Bpe* bpe = test::gpt2_bpe_or_skip();
  if (!bpe) return;
  test::TempDir dir("fabtrain-tok");
  const std::string jsonl = dir.write("docs.jsonl",
                                      "{\"text\": \"first document\"}\n\n"
                                      "{\"text\": \"second one, émoji 😀\"}\n"
                                      "{\"text\": \"third\", \"id\": 3}\n"
                                      "{\"text\": \"fourth\\nline\"}\n");
  const std::string txt = dir.write("plain.txt", "A whole file is one document.\n");
  text::TokenizeConfig c;
  c.inputs = {jsonl, txt};
  c.output_dir = (dir.path() / "out").string();
  c.val_fraction = 0.5;  // documents 1 and 3 (0-based) of five
  c.shard_tokens = 7;
  c.threads = 2;
  std::atomic<bool> stop{false};
  const text::TokenizeSummary s = text::tokenize_corpus(c, stop);
  CHECK(s.documents == 5);
  CHECK(s.val_documents == 2);

  std::vector<int> train, val;
  for (const auto& name : listing(c.output_dir)) {
    INFO(name);
    CHECK(name.rfind("corpus_", 0) == 0);
    const auto t = shard_tokens(c.output_dir + "/" + name);
    CHECK(int(t.size()) <= 7);
    auto& all = name.find("_val_") != std::string::npos ? val : train;
    all.insert(all.end(), t.begin(), t.end());
  }
  CHECK(listing(c.output_dir).front() == "corpus_train_000001.bin");
  auto expect = [&](std::vector<std::string> docs) {
    std::vector<int> out;
    for (auto& d : docs) {
      out.push_back(text::kEndOfText);
      for (int id : bpe->encode(d)) out.push_back(id);
    }
    return out;
  };
  CHECK(train == expect({"first document", "third", "A whole file is one document.\n"}));
  CHECK(val == expect({"second one, émoji 😀", "fourth\nline"}));
  CHECK(std::int64_t(train.size()) == s.train_tokens);
}

TEST_CASE("tokenize cuts a large document for the threads and gets the tokens of one pass") {
  const text::Gpt2Bpe* bpe = test::gpt2_bpe_or_skip();
  if (!bpe) return;
  test::TempDir dir("fabtrain-tok");
  std::string big;
  for (int i = 0; big.size() < 5'000'000; ++i)
    big +=
        fmt::format("Line {} of the text, with words, 中文 and  spaces{}", i, i % 7 ? " " : "\n\n");
  const std::string path = dir.write("big.txt", big);
  text::TokenizeConfig c;
  c.inputs = {path};
  c.output_dir = (dir.path() / "out").string();
  c.val_fraction = 0;
  c.threads = 2;
  std::atomic<bool> stop{false};
  text::tokenize_corpus(c, stop);
  std::vector<int> want = {text::kEndOfText};
  for (int id : bpe->encode(big)) want.push_back(id);
  CHECK(shard_tokens(c.output_dir + "/corpus_train_000001.bin") == want);
}

TEST_CASE("text is cut at a safe cut within the bound, else between two characters") {
  CHECK(text::next_cut("word word word", 2, 10) == 4);  // the space after the first word
  CHECK(text::next_cut("short", 0, 10) == 5);           // the end comes first
  std::string accents;
  for (int i = 0; i < 100; ++i) accents += "é";  // two bytes each, no safe cut
  for (std::size_t from = 1; from < 50; ++from) {
    for (std::size_t most = from + 3; most < from + 10; ++most) {
      const std::size_t cut = text::next_cut(accents, from, most);
      CHECK((cut >= from && cut <= most));
      CHECK((static_cast<unsigned char>(accents[cut]) & 0xC0) != 0x80);
    }
  }
}

TEST_CASE("tokenize reads a text file in parts: one document with the tokens of one pass") {
  const text::Gpt2Bpe* bpe = test::gpt2_bpe_or_skip();
  if (!bpe) return;
  test::TempDir dir("fabtrain-tok");
  std::string prose;
  for (int i = 0; prose.size() < 1'000'000; ++i)
    prose += fmt::format("Line {} of the text, 中文 and  spaces{}", i, i % 5 ? " " : "\n");
  // No safe cut in a run of one byte: cut anyway, within the part size. A NUL has no merge, so
  // its tokens are the same however it is cut.
  const std::string nul(1'000'000, '\0');
  for (const std::string& text : {prose, nul}) {
    const std::string path = dir.write("doc.txt", text);
    text::TokenizeConfig c;
    c.inputs = {path};
    c.output_dir = (dir.path() / "out").string();
    c.val_fraction = 0;
    c.part_bytes = 100'000;
    std::atomic<bool> stop{false};
    const text::TokenizeSummary s = text::tokenize_corpus(c, stop);
    CHECK(s.documents == 1);
    CHECK(s.bytes == std::int64_t(text.size()));
    std::vector<int> want = {text::kEndOfText};
    for (int id : bpe->encode(text)) want.push_back(id);
    CHECK(shard_tokens(c.output_dir + "/corpus_train_000001.bin") == want);
  }
}

TEST_CASE("tokenize: bad input names the file and line and leaves the folder as it was") {
  const text::Gpt2Bpe* bpe = test::gpt2_bpe_or_skip();
  if (!bpe) return;
  test::TempDir dir("fabtrain-tok");
  const std::string out = (dir.path() / "out").string();
  std::filesystem::create_directories(out);
  std::ofstream(out + "/corpus_train_000001.bin") << "an earlier run's shard";
  auto run = [&](std::vector<std::string> inputs) {
    text::TokenizeConfig c;
    c.inputs = inputs;
    c.output_dir = out;
    c.shard_tokens = 3;  // earlier shards are complete when the error comes
    c.batch_bytes = 1;   // each document encoded and written before the next is read
    std::atomic<bool> stop{false};
    return test::error_of([&] { text::tokenize_corpus(c, stop); });
  };
  const std::string good =
      dir.write("good.jsonl", "{\"text\": \"some words here to fill shards\"}\n");
  const std::string no_field =
      dir.write("a.jsonl", "{\"text\": \"ok\"}\n{\"body\": \"no text\"}\n");
  CHECK(run({good, no_field}).find(no_field + ":2: no string field \"text\"") != std::string::npos);
  const std::string not_json = dir.write("b.jsonl", "{\"text\": \"ok\"}\n\n{oops\n");
  CHECK(run({good, not_json}).find(not_json + ":3: not valid JSON") != std::string::npos);
  const std::string empty_text = dir.write("c.jsonl", "{\"text\": \"\"}\n");
  CHECK(run({empty_text}).find(empty_text + ":1: field \"text\" is empty") != std::string::npos);
  const std::string empty = dir.write("d.txt", "");
  CHECK(run({good, empty}).find(empty + ": empty file") != std::string::npos);
  CHECK(run({(dir.path() / "missing-*.txt").string()}).find("missing-*.txt") != std::string::npos);
  // Nothing written, nothing lost: only the earlier shard, unchanged.
  CHECK(listing(out) == std::vector<std::string>{"corpus_train_000001.bin"});
  std::ifstream in(out + "/corpus_train_000001.bin");
  std::stringstream ss;
  ss << in.rdbuf();
  CHECK(ss.str() == "an earlier run's shard");
}

TEST_CASE("an interrupted tokenize leaves no shard under a final name and no temporary") {
  const text::Gpt2Bpe* bpe = test::gpt2_bpe_or_skip();
  if (!bpe) return;
  test::TempDir dir("fabtrain-tok");
  text::TokenizeConfig c;
  c.inputs = {dir.write("a.txt", "one"), dir.write("b.txt", "two")};
  c.output_dir = (dir.path() / "out").string();
  std::atomic<bool> stop{true};  // as if Ctrl-C came before the first document
  CHECK(test::error_of([&] { text::tokenize_corpus(c, stop); }).find("interrupted") !=
        std::string::npos);
  CHECK(listing(c.output_dir).empty());
}

TEST_CASE("a missing vocabulary says how to fetch it") {
  const std::string msg = test::error_of([] { text::load_gpt2_bpe("/nonexistent-vocab-dir"); });
  CHECK(msg.find("/nonexistent-vocab-dir/encoder.json not found") != std::string::npos);
  CHECK(msg.find("scripts/install-deps.sh") != std::string::npos);
}

}  // namespace
}  // namespace fabtrain

namespace fabtrain {
namespace {

TEST_CASE(
    "a shard's token outside the model's vocabulary is named by file, position and byte offset") {
  test::TempDir dir("fabtrain-tok");
  {
    text::ShardWriter w(dir.path().string(), "v", 100);
    const std::vector<std::uint16_t> tokens = {1, 2, 3, 300, 4, 5, 6, 7};
    w.add(text::Split::train, tokens);
    w.commit();
  }
  const std::string shard = (dir.path() / "v_train_000001.bin").string();
  const std::string msg = test::error_of([&] { DataLoader d({shard}, 2, 256, 0, false); });
  CHECK(msg.find(shard + ": token 300 is outside the model's vocabulary of 256") !=
        std::string::npos);
  CHECK(msg.find("is at position 3, byte offset 1030") != std::string::npos);
}

TEST_CASE("tokenize replaces an earlier run's shards of the name as a whole, under a lock") {
  const text::Gpt2Bpe* bpe = test::gpt2_bpe_or_skip();
  if (!bpe) return;
  test::TempDir dir("fabtrain-tok");
  text::TokenizeConfig c;
  c.inputs = {dir.write("a.txt", "A whole file is one document, long enough for four shards.\n")};
  c.output_dir = (dir.path() / "out").string();
  c.val_fraction = 0;
  c.shard_tokens = 4;
  std::atomic<bool> stop{false};
  text::tokenize_corpus(c, stop);
  dir.write("out/other_train_000001.bin", "another name's shard");
  CHECK(listing(c.output_dir).size() > 3);
  c.shard_tokens = 1000;
  text::tokenize_corpus(c, stop);
  CHECK(listing(c.output_dir) ==
        std::vector<std::string>{"corpus_train_000001.bin", "other_train_000001.bin"});

  const text::ShardWriter writing(c.output_dir, "corpus", 1000);
  CHECK(test::contains(test::error_of([&] { text::tokenize_corpus(c, stop); }),
                       "another tokenize is writing into"));
}

TEST_CASE("tokenize: thread counts beyond the stated limit are refused by name") {
  text::TokenizeConfig c;
  c.inputs = {"absent.txt"};
  std::atomic<bool> stop{false};
  for (int threads : {-1, 100'000, 2'000'000'000}) {
    c.threads = threads;
    CHECK(test::contains(test::error_of([&] { text::tokenize_corpus(c, stop); }), "--threads"));
  }
}

TEST_CASE("tokenize: a JSONL line nested past the limit is refused with its file and line") {
  if (!test::gpt2_bpe_or_skip()) return;
  test::TempDir dir("fabtrain-tok");
  const std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
  text::TokenizeConfig c;
  c.inputs = {
      dir.write("docs.jsonl", "{\"text\": \"fine\"}\n{\"text\": \"x\", \"id\": " + deep + "}\n")};
  c.output_dir = (dir.path() / "out").string();
  std::atomic<bool> stop{false};
  CHECK(
      test::contains(test::error_of([&] { text::tokenize_corpus(c, stop); }),
                     "docs.jsonl:2: the JSON nesting depth is 257; fabtrain handles at most 256"));
}

}  // namespace
}  // namespace fabtrain
