// The CUDA tests' first line: without a GPU the test binary says so and exits 77 (ctest's
// SKIP_RETURN_CODE: skipped, not failed); with one, it works on device 0.
#pragma once
#include <cstdio>
#include <cstdlib>

#include "exec/cuda/cuda_check.hpp"
#include "exec/cuda/cuda_device.hpp"

namespace fabtrain::test {

inline void require_gpu() {
  if (cuda::device_count() == 0) {
    std::printf("SKIP: no CUDA device (%s)\n", cuda::device_problem().c_str());
    std::fflush(stdout);
    std::exit(77);  // ctest: SKIP_RETURN_CODE
  }
  CUDA_CHECK(cudaSetDevice(0));
}

}  // namespace fabtrain::test
