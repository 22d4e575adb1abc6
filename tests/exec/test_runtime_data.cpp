// The data loader: llm.c token files and plain text, window cutting, the seeded order, and the
// refusals of bad files (each message names the file and what is wrong).
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "common/data_paths.hpp"
#include "common/error.hpp"
#include "exec/run/data_loader.hpp"
#include "tests/test_support.hpp"

using namespace fabtrain;
using fabtrain::test::error_of;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir() {
  static const test::TempDir dir("fabtrain_data_test");
  fs::create_directories(dir.path());  // each case removes it when done
  return dir.path();
}

void write_tokens(const fs::path& path, std::int32_t magic, std::int32_t version,
                  std::int32_t header_count, const std::vector<std::uint16_t>& tokens) {
  std::int32_t header[256] = {0};
  header[0] = magic;
  header[1] = version;
  header[2] = header_count;
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(header), sizeof(header));
  out.write(reinterpret_cast<const char*>(tokens.data()), std::streamsize(tokens.size() * 2));
}

}  // namespace

TEST_CASE(
    "plain text is refused for a model whose vocabulary is not 256, with how to tokenize it") {
  const fs::path dir = temp_dir();
  const std::string text = (dir / "prose.txt").string();
  std::ofstream(text) << "some plain English text, one byte per token";
  const std::string message = error_of([&] { DataLoader d({text}, 4, 50257, 0, false); });
  CHECK(test::contains(message, "prose.txt: plain text"));
  CHECK(test::contains(message, "vocabulary of 50257"));
  CHECK(test::contains(message, "fabtrain-exec tokenize " + text + " -o DIR"));
  CHECK(test::contains(error_of([&] { DataLoader d({text}, 4, 128, 0, false); }),
                       "vocabulary of 128"));
  CHECK(DataLoader({text}, 4, 256, 0, false).windows() > 0);  // bytes are gpt2-nano's tokens
  fs::remove_all(dir);
}

TEST_CASE("llm.c token files load, and windows give inputs and targets shifted by one") {
  const fs::path dir = temp_dir();
  std::vector<std::uint16_t> tokens(101);
  for (int i = 0; i < 101; ++i) tokens[i] = std::uint16_t(i * 7 % 50257);
  write_tokens(dir / "a.bin", 20240520, 1, 101, tokens);
  DataLoader loader({(dir / "a.bin").string()}, 10, 50257, 1, false);
  CHECK(loader.windows() == 10);  // (101 - 1) / 10
  std::vector<int> in(10), tg(10);
  loader.sequence(3, in, tg);  // unshuffled: window 3 starts at token 30
  for (int i = 0; i < 10; ++i) {
    CHECK(in[i] == tokens[30 + i]);
    CHECK(tg[i] == tokens[31 + i]);
  }
  loader.sequence(13, in, tg);  // epoch 1 wraps to window 3 again
  CHECK(in[0] == tokens[30]);
  fs::remove_all(dir);
}

TEST_CASE("the shuffled order is a permutation fixed by the seed and differs between epochs") {
  const auto a = shuffled_order(1000, 42, 0);
  CHECK(a == shuffled_order(1000, 42, 0));
  CHECK(a != shuffled_order(1000, 43, 0));
  CHECK(a != shuffled_order(1000, 42, 1));
  CHECK(std::set<std::int64_t>(a.begin(), a.end()).size() == 1000);
  CHECK(*std::max_element(a.begin(), a.end()) == 999);
}

TEST_CASE("the shuffled order is the one the PyTorch reference reproduces") {
  // scripts/gpt2-reference.py's shuffled_order gives the same (tests/exec/pytorch_reference.sh
  // checks its output against these numbers), so it reads the windows in fabtrain-exec's order.
  CHECK(shuffled_order(10, 1337, 0) == std::vector<std::int64_t>{2, 9, 3, 1, 5, 4, 7, 6, 8, 0});
  CHECK(shuffled_order(10, 1337, 1) == std::vector<std::int64_t>{8, 7, 2, 3, 9, 1, 4, 0, 5, 6});
}

TEST_CASE("plain text is read byte by byte, several files and globs, windows never cross files") {
  const fs::path dir = temp_dir();
  std::ofstream(dir / "one.txt") << "abcdefghij";  // 10 bytes: 3 windows of 3+1
  std::ofstream(dir / "two.txt") << "0123456";     // 7 bytes: 2 windows
  const auto paths = expand_data_paths({(dir / "*.txt").string()});
  REQUIRE(paths.size() == 2);
  DataLoader loader(paths, 3, 256, 5, true);
  CHECK(loader.windows() == 5);
  CHECK(loader.total_tokens() == 17);
  std::set<std::string> seen;
  for (int g = 0; g < 5; ++g) {
    std::vector<int> in(3), tg(3);
    loader.sequence(g, in, tg);
    seen.insert(std::string{char(in[0]), char(in[1]), char(in[2]), char(tg[2])});
  }
  CHECK(seen == std::set<std::string>{"abcd", "defg", "ghij", "0123", "3456"});
  CHECK(expand_data_paths({(dir / "one.txt").string() + "," + (dir / "two.txt").string()}).size() ==
        2);
  fs::remove_all(dir);
}

TEST_CASE("bad data files are refused with the file and the reason") {
  const fs::path dir = temp_dir();
  write_tokens(dir / "magic.bin", 1234, 1, 4, {1, 2, 3, 4});
  CHECK(error_of([&] {
          TokenFile f((dir / "magic.bin").string());
        }).find("magic.bin: wrong magic 1234") != std::string::npos);
  write_tokens(dir / "short.bin", 20240520, 1, 100, {1, 2, 3});
  const std::string truncated = error_of([&] { TokenFile f((dir / "short.bin").string()); });
  CHECK(truncated.find("short.bin: size 1030 bytes") != std::string::npos);
  CHECK(truncated.find("truncated") != std::string::npos);
  write_tokens(dir / "version.bin", 20240520, 2, 3, {1, 2, 3});
  CHECK(error_of([&] { TokenFile f((dir / "version.bin").string()); }).find("version 2") !=
        std::string::npos);
  std::ofstream(dir / "empty.txt").close();
  CHECK(error_of([&] {
          TokenFile f((dir / "empty.txt").string());
        }).find("empty.txt: empty file") != std::string::npos);
  write_tokens(dir / "big.bin", 20240520, 1, 3, {1, 300, 3});
  CHECK(error_of([&] {
          DataLoader d({(dir / "big.bin").string()}, 1, 256, 0, false);
        }).find("token 300 is outside the model's vocabulary of 256") != std::string::npos);
  std::ofstream(dir / "tiny.txt") << "abc";
  CHECK(error_of([&] {
          DataLoader d({(dir / "tiny.txt").string()}, 8, 256, 0, false);
        }).find("fewer than one sequence") != std::string::npos);
  CHECK(error_of([&] { expand_data_paths({(dir / "none*.txt").string()}); }).find("no such file") !=
        std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("a token file that shrinks while the run reads it is named, never read past its end") {
  const fs::path dir = temp_dir();
  fs::create_directories(dir);
  std::vector<std::uint16_t> tokens(100'000, 7);
  write_tokens(dir / "shrinks.bin", 20240520, 1, 100'000, tokens);
  DataLoader loader({(dir / "shrinks.bin").string()}, 10, 50257, 1, false);
  std::vector<int> in(10), tg(10);
  loader.sequence(9000, in, tg);
  fs::resize_file(dir / "shrinks.bin", 4096);
  CHECK(test::contains(error_of([&] { loader.sequence(9000, in, tg); }),
                       "shrinks.bin: shrank from 201024 to 4096 bytes while the run read it"));
}

TEST_CASE("a file name with a comma is one file when it exists; otherwise the message says how") {
  const fs::path dir = temp_dir();
  fs::create_directories(dir);
  std::ofstream(dir / "comma,name.txt") << "some text";
  const std::string name = (dir / "comma,name.txt").string();
  CHECK(expand_data_paths({name}) == std::vector<std::string>{name});
  const std::string absent = (dir / "other,name.txt").string();
  const std::string message = error_of([&] { expand_data_paths({absent}); });
  CHECK(test::contains(message, "is read as a comma-separated list"));
  CHECK(test::contains(message, (dir / "other?name.txt").string()));
  CHECK(expand_data_paths({(dir / "comma?name.txt").string()}) == std::vector<std::string>{name});
}
