// The CPU backend of the GPT-2 operations (exec/model/gpt2_ops.hpp): the fp32 kernels of
// exec/model/kernels.hpp on host memory, synchronously. The reference every other backend is tested
// against (tests/exec/test_backend_ops.cpp). Not here: the stage, the backend registry.
#pragma once
#include <memory>

#include "exec/model/gpt2_ops.hpp"

namespace fabtrain {

std::unique_ptr<Gpt2Ops> make_cpu_ops();

}  // namespace fabtrain
