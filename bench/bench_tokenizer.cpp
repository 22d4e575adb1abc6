// Tokenizer speed against the JavaScript encoder it reproduces (the gpt-3-encoder package under
// node), on one core each, in one run: the shipped corpus plus a Unicode-heavy text, encoded
// line by line by both, once with an empty cache ("cold") and then the best of 3 more passes
// ("warm").
// Prints MB/s per core for both, side by side, and the ratio (ours / JavaScript; the target
// is > 1). Needs scripts/install-deps.sh's vocabulary and node.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

#include "common/data_dir.hpp"
#include "text/vocab_files.hpp"

using namespace fabtrain;

namespace {

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Ours: cold and warm MB/s on this thread, and the token count.
std::tuple<double, double, long> ours(const text::Gpt2Bpe& bpe, const std::string& text,
                                      int passes) {
  long tokens = 0;
  auto pass = [&](text::Gpt2Bpe::Cache& cache) {
    std::vector<std::uint16_t> ids;
    const auto t0 = std::chrono::steady_clock::now();
    for (std::size_t at = 0; at < text.size();) {
      const std::size_t nl = text.find('\n', at);
      const std::size_t end = nl == std::string::npos ? text.size() : nl + 1;
      bpe.encode(std::string_view(text).substr(at, end - at), ids, cache);
      at = end;
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    tokens = long(ids.size());
    return s;
  };
  text::Gpt2Bpe::Cache cache;
  const double cold = pass(cache);
  double warm = 1e30;
  for (int i = 0; i < passes; ++i) warm = std::min(warm, pass(cache));
  const double mb = double(text.size()) / 1e6;
  return {mb / cold, mb / warm, tokens};
}

// Unicode-heavy text: accented words, CJK, emoji, numbers, in varied order (fixed seed).
std::string unicode_text(std::size_t bytes) {
  const char* words[] = {"café", "naïve",    "Zürich",   "中文分词", "日本語の", "한국어",
                         "😀",    "👍🏽", "2024",     "3.14",     "don't",    "they'll",
                         "  ",   "\n",       "Ångström", "façade"};
  std::string s;
  std::uint64_t x = 88172645463325252ull;
  while (s.size() < bytes) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    s += words[x % 16];
    s += x % 11 ? ' ' : '\n';
  }
  return s;
}

}  // namespace

int main() {
  const text::Gpt2Bpe bpe = text::load_gpt2_bpe();
  const std::string dir = text::vocab_dir("");
  const std::string prose_path = source_dir() + "/data/tiny_prose_train.txt";
  const std::string uni_path = (std::filesystem::temp_directory_path() /
                                fmt::format("fabtrain-bench-unicode-{}.txt", ::getpid()))
                                   .string();
  std::ofstream(uni_path, std::ios::binary) << unicode_text(300'000);
  constexpr int passes = 3;
  fmt::print("{:<26} {:>10} {:>10} {:>10} {:>10} {:>8} {:>8}\n", "text (one core each)",
             "ours cold", "JS cold", "ours warm", "JS warm", "ratio c", "ratio w");
  for (const auto& [label, path] : {std::pair{"tiny prose (300 KB)", prose_path},
                                    std::pair{"Unicode mix (300 KB)", uni_path}}) {
    const auto [cold, warm, our_tokens] = ours(bpe, read(path), passes);
    const std::string cmd =
        fmt::format("node '{}/bench/bpe_node.js' '{}' '{}' {}", source_dir(), dir, path, passes);
    std::FILE* p = ::popen(cmd.c_str(), "r");
    double js_cold = 0, js_warm = 0;
    long tokens = 0;
    if (!p || std::fscanf(p, "%lf %lf %ld", &js_cold, &js_warm, &tokens) != 3) {
      std::fprintf(stderr,
                   "bench_tokenizer: `%s` failed (node and scripts/install-deps.sh needed)\n",
                   cmd.c_str());
      return 1;
    }
    ::pclose(p);
    if (tokens != our_tokens) {
      std::fprintf(stderr, "bench_tokenizer: %s: %ld tokens here, %ld from node\n", label,
                   our_tokens, tokens);
      return 1;
    }
    fmt::print("{:<26} {:>7.1f} MB/s {:>5.1f} MB/s {:>5.1f} MB/s {:>5.1f} MB/s {:>8.1f} {:>8.1f}\n",
               label, cold, js_cold, warm, js_warm, cold / js_cold, warm / js_warm);
    fmt::print("ratio {} (ours / JavaScript, per core, cold cache): {:.1f} (target > 1)\n", label,
               cold / js_cold);
  }
  std::remove(uni_path.c_str());
  return 0;
}
