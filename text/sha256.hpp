// SHA-256 (FIPS 180-4) of a byte string as lowercase hex: checks the vocabulary files against the
// digests recorded in text/gpt2-vocab.sha256.
#pragma once
#include <string>
#include <string_view>

namespace fabtrain::text {

std::string sha256_hex(std::string_view bytes);

}  // namespace fabtrain::text
