// The bench file as the table people know from nccl-tests: per measurement its size in bytes,
// element count, type, time per call and the algorithm and bus bandwidths (GB/s = 1e9 bytes/s).
// Bus bandwidth follows nccl-tests' doc/PERFORMANCE.md: algbw x 2(n-1)/n for all-reduce,
// x (n-1)/n for reduce-scatter and all-gather, whose size is the whole n-rank buffer; a
// point-to-point stream's bus bandwidth is its algorithm bandwidth. The compute and memory
// measurements get a line each.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace fabtrain {

// Reads the document run_bench() wrote (the fields it needs; missing ones fail by name).
std::string bench_table(const nlohmann::json& bench);

}  // namespace fabtrain
