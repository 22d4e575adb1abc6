// The check before a long run, across every rank of the job: what each rank found (its host, its
// device or why it has none, the program's version and checksum, each data file's size and
// checksum), what each pair of VMs measured (round trip and the rate of one timed transfer, beside
// the slice's) and the verdict over all of them. Gathering and measuring are the command's
// (apps/fabtrain-exec/cmd_preflight.cpp); here the facts, their text form, the rounds and the
// rules.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/text_table.hpp"
#include "platforms/slice.hpp"

namespace fabtrain {

struct FileFacts {
  std::string path;
  std::int64_t bytes = -1;  // -1: not readable
  std::string checksum;     // FNV-1a 64, hex; "" when not readable
  std::string error;        // why not readable
};

struct RankFacts {
  int rank = 0;
  std::string host;
  std::string device;        // the backend's description, "" when unavailable
  std::string device_error;  // why the asked device is unavailable here
  std::string version;       // fabtrain's version
  std::string binary_checksum;
  std::vector<FileFacts> files;
};

// One pair of VMs, measured between their first ranks (rank_a < rank_b; rank_a sends).
struct LinkFacts {
  int rank_a = 0, rank_b = 0;
  std::string vm_a, vm_b;                    // the slice's VM names, else the ranks' hosts
  double rtt_s = 0;                          // median MPI round trip of a small message
  double bandwidth = 0;                      // bytes/s of the fastest timed transfer a to b
  std::optional<double> expected_rtt_s;      // the slice's round trip (VMs at different sites)
  std::optional<double> expected_bandwidth;  // the slice's one-stream rate for the pair
};

// FNV-1a 64 of a file's bytes, as 16 hex digits; fills bytes/error.
FileFacts file_facts(const std::string& path);

std::string to_text(const RankFacts& facts);  // one JSON line, for gathering
RankFacts rank_facts_from_text(const std::string& text);

// Every pair of `count` VMs (indices, a < b) in rounds where each VM is in at most one pair:
// count - 1 rounds for an even count, count for an odd one (a round robin), so that measuring a
// round's pairs at once keeps each link to itself and the whole check grows with the count.
std::vector<std::vector<std::pair<int, int>>> pair_rounds(int count);

// A measured round trip is "near" the slice's when at most this many times it plus a
// millisecond (an assumption: queueing and the MPI stack add to the path's own round trip);
// above that the path is another than the slice's (a failure); under the slice's divided by it,
// less a millisecond, the slice is pessimistic (a warning: the prediction is slower than the run).
inline constexpr double kRttSlack = 2.0;

// The rate one TCP stream should reach between two different VMs of the slice (bytes/s): a probed
// one-stream rate between their sites, else the slower NIC at its link class's efficiency, capped
// by the network's or the measured site-pair rate and by the TCP window over the round trip.
double slice_one_stream_rate(const Slice& slice, const Vm& a, const Vm& b);

// A measured transfer is "far below" the slice's rate under this fraction of it, a failure (an
// assumption: the fastest of three transfers has left TCP's slow start behind, so only a large
// shortfall is a finding: another path, interface or a throttled link, and a prediction that
// assumes twice the rate the run will get).
inline constexpr double kBandwidthFloor = 0.5;

// Every mismatch, one line each naming the rank(s): no device, another version or binary, a data
// file missing or different from rank 0's. Empty: all clear.
std::vector<std::string> preflight_failures(const std::vector<RankFacts>& ranks);

// Every VM pair far off the slice, one line each naming both VMs and their ranks: a round trip
// above kRttSlack times the slice's plus a millisecond, a transfer under kBandwidthFloor of the
// slice's rate.
std::vector<std::string> link_failures(const std::vector<LinkFacts>& links);

// What deserves a look but does not stop the run, one line each naming both VMs: a round trip
// far below the slice's (the slice, and so the prediction, is pessimistic for the pair).
std::vector<std::string> link_warnings(const std::vector<LinkFacts>& links);

// One table: a row per rank (host, device, version, binary, data), fitting `width` columns
// (0: no limit) as the plan table does: the device column is narrowed and a long device (a GPU's
// name, memory, driver and CUDA versions, or why there is none) goes on over the row's next
// lines, never cut.
std::string preflight_table(const std::vector<RankFacts>& ranks, int width = table_width(false));

// One table: a row per VM pair (both VMs, their ranks, round trip and transfer rate beside the
// slice's), fitting `width` columns.
std::string link_table(const std::vector<LinkFacts>& links, int width = table_width(false));

}  // namespace fabtrain
