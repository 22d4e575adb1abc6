// `fabtrain-exec bench` prints nccl-tests' columns from the bench file.
#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "exec/measure/bench_network.hpp"
#include "exec/measure/bench_table.hpp"
#include "tests/test_support.hpp"

using namespace fabtrain;

namespace {
std::vector<std::string> words_of_line(const std::string& text, const std::string& starts) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind(starts, 0) == 0) {
      std::istringstream in(line);
      std::vector<std::string> words;
      for (std::string w; in >> w;) words.push_back(w);
      return words;
    }
  return {};
}
}  // namespace

TEST_CASE("the bench table has nccl-tests' columns and bus bandwidths") {
  // 4 ranks, 8 MiB all-reduce in 10 ms: algbw 0.839 GB/s, busbw x 2*3/4 = 1.258 GB/s.
  const double bytes = 8 << 20, seconds = 0.01, algbw = bytes / seconds;
  const nlohmann::json doc = {{"collectives",
                               {{{"op", "all_reduce"},
                                 {"group", "world"},
                                 {"bytes", bytes},
                                 {"ranks", 4},
                                 {"seconds", seconds},
                                 {"algbw", algbw},
                                 {"busbw", algbw * bench::bus_factor("all_reduce", 4)}},
                                {{"op", "all_gather"},
                                 {"group", "dp"},
                                 {"bytes", bytes},
                                 {"ranks", 4},
                                 {"seconds", seconds},
                                 {"algbw", algbw},
                                 {"busbw", algbw * bench::bus_factor("all_gather", 4)}}}},
                              {"p2p",
                               {{{"a", 0},
                                 {"b", 1},
                                 {"message_bytes", 1 << 20},
                                 {"messages", 4},
                                 {"bandwidth", 1e9},
                                 {"latency_s", 50e-6},
                                 {"latency_bytes", 8},
                                 {"rtt_p90_s", 120e-6}}}},
                              {"gemm", nlohmann::json::array()},
                              {"memory", nlohmann::json::array()}};
  const std::string table = bench_table(doc);
  const auto header = words_of_line(table, "# collective");
  REQUIRE(header.size() >= 9);
  CHECK(table.find("size (B)") != std::string::npos);
  CHECK(table.find("(elements)") != std::string::npos);
  const auto all_reduce = words_of_line(table, "all_reduce");
  REQUIRE(all_reduce.size() == 9);
  CHECK(all_reduce[3] == "8388608");
  CHECK(all_reduce[4] == "2097152");  // floats
  CHECK(all_reduce[5] == "float");
  CHECK(all_reduce[6] == "10000.0");  // us
  CHECK(all_reduce[7] == "0.839");
  CHECK(all_reduce[8] == "1.258");
  CHECK(words_of_line(table, "all_gather")[8] == "0.629");  // x 3/4
  const auto stream = words_of_line(table, "sendrecv");
  REQUIRE(stream.size() == 10);  // "ranks 0-1" is two words
  CHECK(stream[8] == "1.000");
  CHECK(stream[9] == "1.000");
  CHECK(words_of_line(table, "latency")[7] == "50.0");
}

TEST_CASE("a bench file without a field the table needs is refused by name") {
  const nlohmann::json doc = {
      {"collectives",
       {{{"op", "all_reduce"}, {"ranks", 2}, {"seconds", 1.0}, {"algbw", 1.0}, {"busbw", 1.0}}}}};
  CHECK(test::error_of([&] { bench_table(doc); }).find("no number 'bytes'") != std::string::npos);
}
