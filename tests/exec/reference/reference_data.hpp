// Reads the PyTorch reference written by make_reference.py (params.bin in llm.c's checkpoint
// layout, reference.bin with the batch, logits, loss and gradients) for the exec tests. A tiny
// test-only reader: the real checkpoint I/O lives in exec/.
#pragma once
#include <doctest/doctest.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "common/data_dir.hpp"
#include "models/model_spec.hpp"

namespace fabtrain::test {

struct Reference {
  ModelSpec model;
  int b = 0, t = 0;
  std::vector<float> params;  // full llm.c vector with Vp
  std::vector<int> x, y;
  float loss = 0;
  std::vector<float> logits;  // (b*t, Vp)
  std::vector<float> grads;   // full llm.c vector with Vp
};

template <typename T>
void read_into(std::ifstream& in, std::vector<T>& v, std::size_t count) {
  v.resize(count);
  in.read(reinterpret_cast<char*>(v.data()), std::streamsize(count * sizeof(T)));
}

inline Reference load_reference() {
  const std::string dir = source_dir() + "/tests/exec/reference/";
  Reference r;
  std::ifstream ref(dir + "reference.bin", std::ios::binary);
  REQUIRE_MESSAGE(ref.good(), "missing " << dir << "reference.bin (run make_reference.py)");
  std::int32_t dims[8];
  ref.read(reinterpret_cast<char*>(dims), sizeof dims);
  r.b = dims[0];
  r.t = dims[1];
  r.model = ModelSpec{"reference", dims[2], dims[3], dims[4], dims[7], dims[5]};
  REQUIRE(r.model.padded_vocab() == dims[6]);
  const std::size_t n = std::size_t(r.b) * r.t;
  read_into(ref, r.x, n);
  read_into(ref, r.y, n);
  ref.read(reinterpret_cast<char*>(&r.loss), sizeof r.loss);
  read_into(ref, r.logits, n * dims[6]);

  std::ifstream params(dir + "params.bin", std::ios::binary);
  REQUIRE_MESSAGE(params.good(), "missing " << dir << "params.bin (run make_reference.py)");
  std::int32_t header[256];
  params.read(reinterpret_cast<char*>(header), sizeof header);
  REQUIRE(header[0] == 20240326);
  REQUIRE(header[1] == 3);
  REQUIRE(header[6] == r.model.n_embd);
  params.seekg(0, std::ios::end);
  const std::size_t count = (std::size_t(params.tellg()) - sizeof header) / sizeof(float);
  params.seekg(sizeof header);
  read_into(params, r.params, count);
  read_into(ref, r.grads, count);
  REQUIRE(params.good());
  REQUIRE(ref.good());
  return r;
}

}  // namespace fabtrain::test
