// NumPy .npy files of float32 matrices (format version 1.0, little-endian '<f4', C order), the
// form embeddings leave this program in: numpy.load("vectors.npy") reads them as (rows, cols).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fabtrain::embed {

struct Matrix {
  std::int64_t rows = 0, cols = 0;
  std::vector<float> data;  // rows * cols, row-major
  const float* row(std::int64_t r) const { return data.data() + r * cols; }
};

// The file's bytes; written to a temporary and renamed (common/atomic_file.hpp).
std::string npy_bytes(const Matrix& m);
void write_npy(const std::string& path, const Matrix& m);
// Reads what write_npy writes; anything else (another type or order, a shape that disagrees with
// the data's size) is an Error naming the file (`path`) and the field.
Matrix parse_npy(std::string_view bytes, const std::string& path);
Matrix read_npy(const std::string& path);

// The index of the first value that is not finite (NaN or infinite), or -1 when all are.
std::int64_t first_non_finite(const float* values, std::int64_t count);
// Fails naming `path`, the row and the column of the matrix's first value that is not finite
// (a cosine with it is NaN, which sorts anywhere).
void require_finite(const Matrix& m, const std::string& path);

}  // namespace fabtrain::embed
