// The byte layout of the FAISS indexes embed writes (FAISS 1.7's index_write.cpp): a flat
// inner-product index ("IxFI"), or an inverted-file index ("IwFl") over a flat quantizer with
// array inverted lists ("ilar") and no direct map. Checked before FAISS reads a file, because
// FAISS trusts the sizes it reads (a flipped byte becomes a terabyte allocation or a read out of
// bounds). Every size is checked against the bytes that remain, the dimension against
// kMaxIndexDimension, and the file must end where the index does. Not here: reading the index
// (vector_index.hpp), which also checks the ids of an inverted file once FAISS has read it.
#pragma once
#include <string>
#include <string_view>

namespace fabtrain::embed {

inline constexpr int kMaxIndexDimension = 65536;  // GPT-2 XL embeds in 1,600

// Throws fabtrain::Error naming `path` and the field when `bytes` is not such an index.
void check_faiss_layout(std::string_view bytes, const std::string& path);

}  // namespace fabtrain::embed
