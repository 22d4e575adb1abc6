// The tokenizer against an implementation nobody here wrote: the gpt-3-encoder npm package run
// by node gives the same ids for a corpus of hand-picked cases (Unicode letters with accents,
// CJK, emoji, runs of whitespace and newlines, contractions, numbers, invalid UTF-8, the
// package's comma quirk) and of random strings mixing them, plus the shipped prose.
#include <doctest/doctest.h>

#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/data_dir.hpp"
#include "tests/test_support.hpp"
#include "tests/text/text_test_support.hpp"
#include "text/utf8.hpp"

namespace fabtrain {
namespace {

std::vector<std::string> hand_picked() {
  return {
      "Hello world",
      "Café crème brûlée, naïve façade, Ångström, São Paulo, Œuvre, ﬁne",
      "e\xCC\x81 (e + combining acute), Zürich, ÀÉÎÕÜ àéîõü",
      "中文分词测试：我们的模型。日本語のテキスト、カタカナ。한국어 텍스트",
      "emoji 😀😃 👍🏽 👨‍👩‍👧 🇫🇷🇯🇵 ❤️ text😀text",
      "   leading spaces and trailing   ",
      "tabs\t\tand\t spaces  \t mixed",
      "line one\nline two\n\nline four\n\n\n\nend\n",
      "windows\r\nline\r\nends\r\n",
      "nbsp\xC2\xA0here, ideographic\xE3\x80\x80space, em\xE2\x80\x83space, line\xE2\x80\xA8sep",
      "I'm, you're, he's, we've, they'll, I'd, can't, don't, it's, O'Neil, 'tis, ''s, 'S 'LL",
      "curly ’s and ‘quotes’ “double”",
      "Numbers: 0 1 12 123 1234 12345 3.14159 -42 1e10 1,000,000 ½ Ⅻ ٣٤ ４２",
      "2024-05-20T12:34:56Z, version 1.2.3, 0xDEADBEEF, $9.99, 100%",
      "punctuation!!! ??? ... --- ,,, ;;; ::: (([[{{}}]])) <|endoftext|>",
      "quirk: \",\" },\" ],\" ),\" \"],\" ],[ ',\" .\",\" ',' ,\" .,\" [\"a\",\"b\"]",
      "invalid \xFF byte, lone \xC3 lead, \xE2\x82 truncated, \xED\xA0\x80 surrogate, "
      "\xF4\x90\x80\x80 too big",
      "\xC0\xAF overlong, \x80\x80 stray continuation, \xF0\x9F\x98 cut emoji",
      "control \x01\x02\x7F chars, NUL \x00 inside",
      "\xEF\xBB\xBF BOM at start, Ġ Ċ (GPT-2's own byte stand-ins)",
      std::string(200, ' ') + "x" + std::string(37, '\n') + "y" + std::string(5, '\t'),
      "a",
      " ",
      "\n",
      "averyveryveryverylongwordwithoutanyspacesatallthatgoesonandonandonforeverandever",
      "mixed123abc 456def abc789 a1b2c3",
  };
}

// Random strings from fragments of every kind, fixed seed (splitmix64), so failures reproduce.
std::vector<std::string> random_strings(int count) {
  const std::vector<std::string> fragments = {"a",
                                              "Z",
                                              "the",
                                              " the",
                                              "é",
                                              "ß",
                                              "Ω",
                                              "中",
                                              "文字",
                                              "ｶﾀ",
                                              "😀",
                                              "👍🏽",
                                              "‍",
                                              " ",
                                              "  ",
                                              "\t",
                                              "\n",
                                              "\r\n",
                                              "\n\n",
                                              "'",
                                              "'s",
                                              "'ll",
                                              "'re",
                                              "'D",
                                              "’",
                                              "0",
                                              "42",
                                              " 7",
                                              "٣",
                                              "½",
                                              "!",
                                              "...",
                                              ",",
                                              "\"",
                                              "\",",
                                              "],",
                                              "[",
                                              "\xFF",
                                              "\xC3",
                                              "\xE2\x82",
                                              "\xED\xA0\x80",
                                              "\xC2\xA0",
                                              "\xE3\x80\x80",
                                              "\xE2\x80\xA8",
                                              "\xC2\x85",
                                              "\x0B",
                                              "\x0C",
                                              "<|endoftext|>",
                                              "-",
                                              "_",
                                              "@",
                                              "#"};
  std::uint64_t state = 20240520;
  auto next = [&] {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  std::vector<std::string> out;
  for (int i = 0; i < count; ++i) {
    std::string s;
    const int n = 1 + int(next() % 40);
    for (int k = 0; k < n; ++k) s += fragments[next() % fragments.size()];
    out.push_back(s);
  }
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST_CASE(
    "GPT-2 BPE gives the gpt-3-encoder package's ids under node, Unicode and invalid UTF-8 "
    "included") {
  const text::Gpt2Bpe* bpe = test::gpt2_bpe_or_skip();
  if (!bpe) return;
  if (!test::have_node()) {
    std::printf("SKIPPED: node is not installed (scripts/install-deps.sh)\n");
    return;
  }
  std::vector<std::string> corpus = hand_picked();
  for (auto& s : random_strings(400)) corpus.push_back(s);
  corpus.push_back(read_file(source_dir() + "/data/tiny_prose_val.txt"));
  REQUIRE(corpus.back().size() > 10000);

  test::TempDir dir("fabtrain-bpe");
  const auto files = dir.path() / "corpus";
  std::filesystem::create_directories(files);
  for (std::size_t i = 0; i < corpus.size(); ++i) {
    std::ofstream(files / fmt::format("{:05d}.txt", i), std::ios::binary) << corpus[i];
  }
  const std::string out = (dir.path() / "node.json").string();
  const std::string cmd = fmt::format("node '{}/tests/text/encode_with_node.js' '{}' '{}' > '{}'",
                                      source_dir(), text::vocab_dir(""), files.string(), out);
  REQUIRE_MESSAGE(std::system(cmd.c_str()) == 0, cmd);
  const nlohmann::json expected = nlohmann::json::parse(read_file(out));
  REQUIRE(expected.size() == corpus.size());

  std::size_t tokens = 0;
  for (std::size_t i = 0; i < corpus.size(); ++i) {
    const std::vector<int> ids = bpe->encode(corpus[i]);
    const std::vector<int> want = expected[i].get<std::vector<int>>();
    CHECK_MESSAGE(
        ids == want, "case ", i, ": ",
        nlohmann::json(corpus[i]).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace),
        "\n ours ", nlohmann::json(ids).dump(), "\n node ", nlohmann::json(want).dump());
    tokens += ids.size();
  }
  CHECK(tokens > 5000);
}

TEST_CASE("decoding gives back the text, invalid UTF-8 replaced as node replaces it") {
  const text::Gpt2Bpe* bpe = test::gpt2_bpe_or_skip();
  if (!bpe) return;
  for (const std::string& s : hand_picked())
    CHECK(bpe->decode(bpe->encode(s)) == text::sanitize_utf8(s));
  CHECK(text::sanitize_utf8("ok \xE2\x82 x") ==
        "ok \xEF\xBF\xBD x");                                    // one U+FFFD per maximal subpart
  CHECK(text::sanitize_utf8("\xF0\x9F\x98") == "\xEF\xBF\xBD");  // a cut 4-byte sequence
  CHECK(text::sanitize_utf8("\xED\xA0\x80") ==
        "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  CHECK(bpe->encode("Hello world") == std::vector<int>{15496, 995});
}

}  // namespace
}  // namespace fabtrain
