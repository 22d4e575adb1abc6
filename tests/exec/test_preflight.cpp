// The preflight's rules over every rank's facts: a missing device, another version or binary, a
// data file missing or different from rank 0's, a round trip far above the slice's; facts survive
// their text form; a file's checksum follows its bytes.
#include <doctest/doctest.h>

#include "exec/measure/preflight.hpp"
#include "tests/test_support.hpp"

using namespace fabtrain;
using test::contains;

namespace {

RankFacts rank(int r, const std::string& data_checksum = "aa") {
  RankFacts f;
  f.rank = r, f.host = "vm" + std::to_string(r), f.device = "CPU", f.version = "1.0";
  f.binary_checksum = "b1";
  f.files.push_back({"train.bin", 100, data_checksum, ""});
  f.rtt_to_rank0_s = r == 0 ? 0 : 0.05;
  return f;
}

bool any(const std::vector<std::string>& lines, const std::string& part) {
  for (const auto& l : lines)
    if (contains(l, part)) return true;
  return false;
}

}  // namespace

TEST_CASE("preflight: ranks that agree pass; each kind of mismatch is named with its rank") {
  CHECK(preflight_failures({rank(0), rank(1)}).empty());
  auto other = rank(1, "bb");
  CHECK(any(preflight_failures({rank(0), other}), "rank 1 (vm1): data file train.bin differs"));
  other = rank(1);
  other.files[0] = {"train.bin", -1, "", "No such file or directory"};
  CHECK(any(preflight_failures({rank(0), other}), "train.bin: No such file"));
  other = rank(1);
  other.device.clear(), other.device_error = "no CUDA device";
  CHECK(any(preflight_failures({rank(0), other}), "rank 1 (vm1): no CUDA device"));
  other = rank(1);
  other.version = "0.9";
  CHECK(any(preflight_failures({rank(0), other}), "fabtrain 0.9 but rank 0 runs 1.0"));
  other = rank(1);
  other.binary_checksum = "b2";
  CHECK(any(preflight_failures({rank(0), other}), "fabtrain-exec differs"));
  other = rank(1);
  other.expected_rtt_s = 0.02;  // measured 50 ms against the slice's 20: above 2 x 20 + 1
  CHECK(any(preflight_failures({rank(0), other}), "round trip to rank 0 50.00 ms, the slice says"));
  other.expected_rtt_s = 0.03;  // 50 <= 2 x 30 + 1: near enough
  CHECK(preflight_failures({rank(0), other}).empty());
}

TEST_CASE("preflight facts survive their text form; a checksum follows the file's bytes") {
  RankFacts r = rank(3);
  r.expected_rtt_s = 0.1;
  const RankFacts back = rank_facts_from_text(to_text(r));
  CHECK(back.rank == 3);
  CHECK(back.host == "vm3");
  CHECK(back.files.at(0).checksum == "aa");
  CHECK(back.expected_rtt_s.value_or(0) == doctest::Approx(0.1));
  test::TempDir dir("fabtrain-preflight");
  const auto a = file_facts(dir.write("a.txt", "hello"));
  const auto b = file_facts(dir.write("b.txt", "hellp"));
  CHECK(a.bytes == 5);
  CHECK(a.checksum.size() == 16);
  CHECK(a.checksum != b.checksum);
  CHECK(file_facts(dir.write("c.txt", "hello")).checksum == a.checksum);
  CHECK_FALSE(file_facts((dir.path() / "none").string()).error.empty());
  CHECK(contains(preflight_table({rank(0), rank(1)}), "vm1"));
}

TEST_CASE("preflight: the table fits the width and wraps a long device name, never cuts it") {
  RankFacts a = rank(0), b = rank(1);
  a.host = "node1-utah";
  a.device =
      "cuda tf32 on GPU 0: NVIDIA RTX A6000, 47.5 GiB, driver 535.104.05, CUDA 12.2, nccl "
      "communicator";
  b.device =
      "cuda tf32 on GPU 0: NVIDIA RTX A6000, 47.5 GiB, driver 535.129.03, CUDA 12.2, nccl "
      "communicator";
  const std::string fitted = preflight_table({a, b}, 100);
  int lines = 0;
  for (std::size_t start = 0, end; start < fitted.size(); start = end + 1, ++lines) {
    end = fitted.find('\n', start);
    CHECK(end - start <= 100);
  }
  CHECK(lines > 3);                        // a header and two ranks, each over several lines
  CHECK(contains(fitted, "535.104.05,"));  // where the two devices differ, both shown
  CHECK(contains(fitted, "535.129.03,"));
  CHECK(contains(fitted, a.host));
  const std::string wide = preflight_table({a, b}, 0);
  CHECK(contains(wide, a.device));
  CHECK(contains(wide, b.device));
  CHECK(contains(preflight_table({rank(0), rank(1)}, 100), "vm1"));
}

TEST_CASE("preflight: a transfer far below the slice's rate is a warning naming the rank") {
  RankFacts slow = rank(1);
  slow.bandwidth_from_rank0 = 40e6;
  slow.expected_bandwidth = 100e6;  // 40 < half of 100
  const auto warnings = preflight_warnings({rank(0), slow});
  CHECK(any(warnings, "rank 1 (vm1): a transfer from rank 0 ran at 40.0 MB/s, under half"));
  CHECK(preflight_failures({rank(0), slow}).empty());  // a warning, not a mismatch
  slow.expected_bandwidth = 70e6;                      // 40 >= half of 70: near enough
  CHECK(preflight_warnings({rank(0), slow}).empty());
  slow.expected_bandwidth.reset();  // no slice to compare with: nothing said
  CHECK(preflight_warnings({rank(0), slow}).empty());
  const RankFacts back = rank_facts_from_text(to_text(RankFacts(slow)));
  CHECK(back.bandwidth_from_rank0 == doctest::Approx(40e6));
  CHECK(contains(preflight_table({rank(0), slow}), "40.0"));
}

TEST_CASE(
    "preflight: the slice's one-stream rate is the NICs', the window's over the trip, or probed") {
  Slice slice = load_slice("utah-amst");
  const Vm& a = slice.vms[0];
  const Vm& b = slice.vms[1];
  const double rate = slice_one_stream_rate(slice, a, b);
  const LinkClass& l2sts = slice.catalog->link_class("l2sts");
  CHECK(rate > 0);
  CHECK(rate <= slice.catalog->nic(a.nic).bandwidth * l2sts.efficiency);
  if (l2sts.tcp_window_bytes > 0)  // one stream over 103 ms is held to its window per trip
    CHECK(rate <= l2sts.tcp_window_bytes / pair_rtt_s(slice, a.site, b.site) * (1 + 1e-12));
  // A probed one-stream rate between the sites is what the slice says, whatever the NICs.
  SiteLink probed;
  probed.a = a.site, probed.b = b.site, probed.rtt_s = 0.103;
  probed.bandwidth_one_stream = 4.2e7;
  slice.links.push_back(probed);
  CHECK(slice_one_stream_rate(slice, a, b) == 4.2e7);
}
