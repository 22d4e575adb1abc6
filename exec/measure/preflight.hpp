// The check before a long run, across every rank of the job: what each rank found (its host, its
// device or why it has none, the program's version and checksum, each data file's size and
// checksum, its round trip to rank 0 and the rate of one timed transfer from rank 0) and the
// verdict over all of them. Gathering is the
// command's (apps/fabtrain-exec/cmd_preflight.cpp); here the facts, their text form and the rules.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
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
  double rtt_to_rank0_s = 0;                 // median MPI round trip of a small message (rank 0: 0)
  std::optional<double> expected_rtt_s;      // the slice's round trip for this rank's pair with 0
  double bandwidth_from_rank0 = 0;           // bytes/s of a timed transfer from rank 0 (rank 0: 0)
  std::optional<double> expected_bandwidth;  // the slice's one-stream rate for the pair with 0
};

// FNV-1a 64 of a file's bytes, as 16 hex digits; fills bytes/error.
FileFacts file_facts(const std::string& path);

std::string to_text(const RankFacts& facts);  // one JSON line, for gathering
RankFacts rank_facts_from_text(const std::string& text);

// A measured round trip is "near" the slice's when at most this many times it plus a
// millisecond (an assumption: queueing and the MPI stack add to the path's own round trip).
inline constexpr double kRttSlack = 2.0;

// The rate one TCP stream should reach between two different VMs of the slice (bytes/s): a probed
// one-stream rate between their sites, else the slower NIC at its link class's efficiency, capped
// by the network's or the measured site-pair rate and by the TCP window over the round trip.
double slice_one_stream_rate(const Slice& slice, const Vm& a, const Vm& b);

// A measured transfer is "far below" the slice's rate under this fraction of it (an assumption:
// one short transfer over TCP pays its slow start, so only a large shortfall is a finding: another
// path, interface or a throttled link).
inline constexpr double kBandwidthFloor = 0.5;

// Every mismatch, one line each naming the rank(s): no device, another version or binary, a data
// file missing or different from rank 0's, a round trip far above the slice's. Empty: all clear.
std::vector<std::string> preflight_failures(const std::vector<RankFacts>& ranks);

// What deserves a look but does not stop the run, one line each naming the rank: a transfer from
// rank 0 far below the slice's rate for the pair.
std::vector<std::string> preflight_warnings(const std::vector<RankFacts>& ranks);

// One table: a row per rank (host, device, version, binary, data, round trip, transfer rate),
// fitting `width` columns (0: no limit) as the plan table does: the device column is narrowed
// and a long device (a GPU's name, memory, driver and CUDA versions, or why there is none) goes
// on over the row's next lines, never cut.
std::string preflight_table(const std::vector<RankFacts>& ranks, int width = table_width(false));

}  // namespace fabtrain
