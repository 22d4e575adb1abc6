// libFuzzer target: arbitrary bytes through GPT-2's tokenizer (UTF-8 repair, the pre-tokenizer,
// BPE), the whole text and cut at the safe points tokenize uses, which must give the same tokens;
// cuts bounded in size always land within the bound.
// Needs the GPT-2 vocabulary (scripts/install-deps.sh); without it the target does nothing.
#include <cstdio>
#include <optional>

#include "tests/fuzz/fuzz_input.hpp"
#include "text/pretokenize.hpp"
#include "text/vocab_files.hpp"

namespace {

const fabtrain::text::Gpt2Bpe* tokenizer() {
  static const std::optional<fabtrain::text::Gpt2Bpe> bpe =
      []() -> std::optional<fabtrain::text::Gpt2Bpe> {
    try {
      return fabtrain::text::load_gpt2_bpe();
    } catch (const fabtrain::Error& e) {
      std::fprintf(stderr, "fuzz_tokenizer: no vocabulary, nothing fuzzed: %s\n", e.what());
      return std::nullopt;
    }
  }();
  return bpe ? &*bpe : nullptr;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fabtrain::text;
  const Gpt2Bpe* bpe = tokenizer();
  if (!bpe) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::vector<int> whole = bpe->encode(text);
  std::vector<int> parts;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t cut = next_safe_cut(text, at + 1);
    for (int id : bpe->encode(text.substr(at, cut - at))) parts.push_back(id);
    at = cut;
  }
  if (parts != whole) __builtin_trap();  // a safe cut changed the tokens
  // Cuts bounded at 16 bytes (a hard cut where no safe one comes) always move on within them.
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t cut = next_cut(text, at + 8, at + 16);
    if (cut <= at || (cut < text.size() && cut > at + 16)) __builtin_trap();
    at = cut;
  }
  return 0;
}
