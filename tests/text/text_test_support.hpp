// What the text tests share: the tokenizer when its vocabulary is installed (else the test prints
// a SKIPPED line, which ctest reports as skipped), and node with the gpt-3-encoder package.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include "text/vocab_files.hpp"

namespace fabtrain::test {

// The tokenizer, or nullopt after printing why the test is skipped.
inline const text::Gpt2Bpe* gpt2_bpe_or_skip() {
  static const std::optional<text::Gpt2Bpe> bpe = []() -> std::optional<text::Gpt2Bpe> {
    try {
      return text::load_gpt2_bpe();
    } catch (const Error& e) {
      std::printf("SKIPPED: %s\n", e.what());
      return std::nullopt;
    }
  }();
  if (!bpe)
    std::printf("SKIPPED: the GPT-2 vocabulary is not installed (scripts/install-deps.sh)\n");
  return bpe ? &*bpe : nullptr;
}

inline bool have_node() { return std::system("node --version >/dev/null 2>&1") == 0; }

}  // namespace fabtrain::test
