// NumPy .npy files of float32 matrices (format version 1.0, little-endian '<f4', C order), the
// form embeddings leave this program in: numpy.load("vectors.npy") reads them as (rows, cols).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace fabtrain::embed {

struct Matrix {
  std::int64_t rows = 0, cols = 0;
  std::vector<float> data;  // rows * cols, row-major
  const float* row(std::int64_t r) const { return data.data() + r * cols; }
};

// Written to a temporary and renamed (exec/model/checkpoint.hpp's write_file_atomically).
void write_npy(const std::string& path, const Matrix& m);
// Reads what write_npy writes; anything else is an Error naming the file and the field.
Matrix read_npy(const std::string& path);

}  // namespace fabtrain::embed
