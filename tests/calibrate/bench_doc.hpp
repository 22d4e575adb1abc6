// A bench file's JSON as fabtrain-exec bench writes it, with chosen rates, for the tests.
#pragma once
#include <nlohmann/json.hpp>
#include <vector>

namespace fabtrain::test {

struct BenchPair {
  double rtt_s, bandwidth;
};

// GEMMs of gpt2-nano's shapes (B=4, T=64) at gemm_rate FLOP/s; memory kernels at memory_rate.
inline nlohmann::json bench_doc(double gemm_rate, double memory_rate,
                                std::vector<BenchPair> pairs = {}) {
  using nlohmann::json;
  json gemm = json::array();
  const int rows = 4 * 64, C = 64, Vp = 256;
  const int shapes[][2] = {{C, 3 * C}, {C, C}, {C, 4 * C}, {4 * C, C}, {C, Vp}};
  for (const auto& s : shapes)
    for (const char* pass : {"forward", "backward_input", "backward_weight"}) {
      const double flops = 2.0 * rows * s[0] * s[1];
      gemm.push_back(
          {{"name", "x"},
           {"pass", pass},
           {"m", rows},
           {"n", s[1]},
           {"k", s[0]},
           {"flops", flops},
           {"ranks",
            {{{"rank", 0}, {"seconds", flops / gemm_rate}, {"flops_per_s", gemm_rate}},
             {{"rank", 1}, {"seconds", flops / gemm_rate}, {"flops_per_s", gemm_rate}}}}});
    }
  json memory = json::array();
  for (const char* k : {"copy", "triad", "layernorm"})
    memory.push_back(
        {{"kernel", k},
         {"bytes", 1e8},
         {"ranks", {{{"rank", 0}, {"seconds", 1e8 / memory_rate}, {"bytes_per_s", memory_rate}}}}});
  json p2p = json::array();
  for (const auto& p : pairs)
    p2p.push_back(
        {{"a", 0},
         {"b", 1},
         {"host_a", "siteA"},
         {"host_b", "siteB"},
         {"rtt_s", p.rtt_s},
         {"latency_s", p.rtt_s / 2},
         {"latency_bytes", 8},
         {"message_bytes", 4194304},
         {"messages", 4},
         {"stream_s", 0.5},
         {"bandwidth", p.bandwidth},
         {"message_latencies", json::array({{{"bytes", 32768}, {"one_way_s", 0.7 * p.rtt_s}}})}});
  return {{"format", "fabtrain-bench"},
          {"version", 1},
          {"model",
           {{"name", "gpt2-nano"},
            {"layers", 2},
            {"hidden", 64},
            {"heads", 4},
            {"context", 128},
            {"vocab", 256}}},
          {"batch", 4},
          {"seq", 64},
          {"world", 2},
          {"hosts", {"siteA", "siteB"}},
          {"device", {{"kind", "cpu"}, {"description", "test CPU"}, {"cores", 2}}},
          {"threads", 1},
          {"mpi", "test"},
          {"gemm", gemm},
          {"memory", memory},
          {"p2p", p2p},
          {"collectives", json::array({{{"op", "all_reduce"},
                                        {"bytes", 1048576},
                                        {"ranks", 2},
                                        {"seconds", 0.01},
                                        {"algbw", 1.048576e8},
                                        {"busbw", 1.048576e8}}})}};
}

}  // namespace fabtrain::test
