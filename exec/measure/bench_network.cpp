// Point-to-point and collective measurements (see bench_network.hpp).
#include "exec/measure/bench_network.hpp"

#include <algorithm>
#include <cmath>

#include "common/error.hpp"
#include "exec/measure/tcp_streams.hpp"

namespace fabtrain::bench {
namespace {

constexpr int kTagPing = 9100, kTagStream = 9101, kTagAck = 9102, kTagCount = 9103;
constexpr std::size_t kPacked = 7;  // numbers of a pair sent to rank 0 before the message latencies

std::size_t floats_for(double bytes) {
  return std::max<std::size_t>(1, std::size_t(std::ceil(bytes / sizeof(float))));
}

// Rank 0 decides a count (from its own warm-up timing) and every rank gets the same one.
int agree(Communicator& comm, int count_on_rank0) {
  std::vector<float> v{comm.rank() == 0 ? float(count_on_rank0) : 0.0f};
  comm.all_reduce(0, v);
  return std::max(1, int(v[0]));
}

int reps_within(double one_s, double budget_s, int wanted) {
  if (one_s <= 0) return wanted;
  return std::clamp(int(budget_s / one_s), 1, wanted);
}

// One pair's measurements between ranks a and b (each of them runs the same calls): round trips
// of a small message, a stream of large ones, round trips of each message size; a times a
// warm-up of each and tells b how many repetitions fit the budget.
class PairBench {
 public:
  PairBench(Communicator& comm, const NetworkOptions& o, int a, int b)
      : comm_(comm),
        o_(o),
        a_(a),
        b_(b),
        me_(comm.rank()),
        small_(floats_for(o.latency_bytes), 1.0f),
        large_(floats_for(o.message_bytes), 1.0f) {}

  void measure(PairResult& r) {
    auto ping = [&] { ping_pong(small_); };
    auto stream = [&] { this->stream(); };
    ping();  // connection set-up, untimed
    const double ping_once = seconds_of(ping);
    const double stream_once = seconds_of(stream);
    const std::vector<double> rtts = repeat(ping, ping_once, o_.latency_reps);
    const std::vector<double> streams = repeat(stream, stream_once, o_.stream_reps);
    r.rtt_s = median(rtts);
    r.rtt_p90_s = quantile(rtts, 0.9);
    r.rtt_samples = int(rtts.size());
    r.latency_s = r.rtt_s / 2;
    r.stream_s = median(streams);
    const double transfer_s = std::max(r.stream_s - r.rtt_s, 1e-9);
    r.bandwidth = r.messages * r.message_bytes / transfer_s;
    for (double bytes : o_.message_latency_bytes) {
      std::vector<float> message(floats_for(bytes), 1.0f);
      auto round_trip = [&] { ping_pong(message); };
      round_trip();  // untimed
      const double once = seconds_of(round_trip);
      const std::vector<double> trips = repeat(round_trip, once, o_.latency_reps);
      r.message_latencies.emplace_back(double(message.size() * sizeof(float)), median(trips) / 2);
    }
  }

 private:
  void ping_pong(std::vector<float>& message) {  // a -> b -> a
    if (me_ == a_) {
      comm_.send(b_, message, kTagPing);
      comm_.recv(b_, message, kTagPing);
    } else {
      comm_.recv(a_, message, kTagPing);
      comm_.send(a_, message, kTagPing);
    }
  }

  void stream() {  // a sends the messages back to back, b acknowledges the last
    if (me_ == a_) {
      for (int m = 0; m < o_.messages; ++m) comm_.send(b_, large_, kTagStream);
      comm_.recv(b_, small_, kTagAck);
    } else {
      for (int m = 0; m < o_.messages; ++m) comm_.recv(a_, large_, kTagStream);
      comm_.send(a_, small_, kTagAck);
    }
  }

  // The repetitions that fit the budget by a's warm-up (`once`), at most `wanted`, each timed.
  template <typename F>
  std::vector<double> repeat(F&& f, double once, int wanted) {
    std::vector<float> count{me_ == a_ ? float(reps_within(once, o_.budget_s, wanted)) : 0.0f};
    if (me_ == a_)
      comm_.send(b_, count, kTagCount);
    else
      comm_.recv(a_, count, kTagCount);
    std::vector<double> seconds;
    for (int i = 0; i < int(count[0]); ++i) seconds.push_back(seconds_of(f));
    return seconds;
  }

  Communicator& comm_;
  const NetworkOptions& o_;
  const int a_, b_, me_;
  std::vector<float> small_, large_;
};

// Rank 0 learns pair (a, b)'s numbers from a (unless it is a).
void send_pair_to_root(Communicator& comm, const NetworkOptions& o, int a, PairResult& r) {
  const int me = comm.rank();
  if (a == 0) return;
  std::vector<float> packed{float(r.rtt_s),      float(r.stream_s),    float(r.bandwidth),
                            float(r.rtt_p90_s),  float(r.rtt_samples), float(r.tcp_one_stream),
                            float(r.tcp_streams)};
  for (const auto& [bytes, seconds] : r.message_latencies) packed.push_back(float(seconds));
  packed.resize(kPacked + o.message_latency_bytes.size());
  if (me == a) comm.send(0, packed, kTagCount + 1);
  if (me != 0) return;
  comm.recv(a, packed, kTagCount + 1);
  r.rtt_s = packed[0];
  r.latency_s = r.rtt_s / 2;
  r.stream_s = packed[1];
  r.bandwidth = packed[2];
  r.rtt_p90_s = packed[3];
  r.rtt_samples = int(packed[4]);
  r.tcp_one_stream = packed[5];
  r.tcp_streams = packed[6];
  r.message_latencies.clear();
  for (std::size_t i = 0; i < o.message_latency_bytes.size(); ++i)
    r.message_latencies.emplace_back(double(floats_for(o.message_latency_bytes[i]) * sizeof(float)),
                                     packed[kPacked + i]);
}

}  // namespace

double bus_factor(const std::string& op, int n) {
  if (n < 1) fail("bench: a collective over {} ranks", n);
  return op == "all_reduce" ? 2.0 * (n - 1) / n : double(n - 1) / n;
}

std::vector<PairResult> measure_pairs(Communicator& comm, const NetworkOptions& o) {
  std::vector<PairResult> results;
  const int n = comm.size(), me = comm.rank();
  const double message_bytes = double(floats_for(o.message_bytes) * sizeof(float));
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b) {
      comm.barrier();
      PairResult r{a, b};
      r.message_bytes = message_bytes;
      r.messages = o.messages;
      if (me == a || me == b) PairBench(comm, o, a, b).measure(r);
      if (o.tcp_streams > 0 && (me == a || me == b)) {
        r.tcp_one_stream = tcp_bandwidth(comm, a, b, {1, o.tcp_bytes, 120});
        r.tcp_streams = tcp_bandwidth(comm, a, b, {o.tcp_streams, o.tcp_bytes, 120});
      }
      send_pair_to_root(comm, o, a, r);
      results.push_back(r);
    }
  comm.barrier();
  return results;
}

std::vector<CollectiveResult> measure_collectives(Communicator& comm, const std::string& kind,
                                                  int group, int group_size,
                                                  const std::vector<double>& sizes_bytes,
                                                  const NetworkOptions& o) {
  std::vector<CollectiveResult> results;
  const int n = group_size;
  if (n < 2) return results;
  const bool member = group >= 0;
  for (const double size : sizes_bytes) {
    // A multiple of n floats, so reduce-scatter and all-gather chunks are equal.
    const std::size_t total = (floats_for(size) + n - 1) / n * n;
    std::vector<float> full(total, 1.0f), chunk(total / n, 1.0f);
    for (const std::string op : {"all_reduce", "reduce_scatter", "all_gather"}) {
      // A start and its wait, the calls the schedule's gradient and ZeRO buckets make (with
      // overlap on or off): Open MPI plays them with libnbc, whose reduce-scatter takes other
      // rounds than the blocking call's (measured: ZeRO-2 over 25 ms one way was predicted 42%
      // short from blocking calls).
      auto run = [&] {
        if (!member) return;
        if (op == "all_reduce")
          comm.wait(comm.start_all_reduce(group, full));
        else if (op == "reduce_scatter")
          comm.wait(comm.start_reduce_scatter(group, full, chunk));
        else
          comm.wait(comm.start_all_gather(group, chunk, full));
      };
      comm.barrier();
      run();  // connection set-up and first-touch, untimed
      const double once = seconds_of(run);
      const int calls = agree(comm, std::max(4, reps_within(once, o.budget_s / 3, 16)));
      // As nccl-tests does: calls back to back, time over count. A single call timed after a
      // barrier carries the ranks' skew leaving it (up to a one-way latency on a long path).
      std::vector<double> times;
      for (int i = 0; i < 3; ++i) {
        comm.barrier();
        times.push_back(seconds_of([&] {
                          for (int c = 0; c < calls; ++c) run();
                        }) /
                        calls);
      }
      std::vector<float> sum{member ? float(median(times)) : 0.0f, member ? 1.0f : 0.0f};
      comm.all_reduce(0, sum);  // the mean over the member ranks
      CollectiveResult r{op, kind, double(total * sizeof(float)), n, double(sum[0] / sum[1])};
      r.algbw = r.seconds > 0 ? r.bytes / r.seconds : 0;
      r.busbw = r.algbw * bus_factor(op, n);
      results.push_back(r);
    }
  }
  return results;
}

}  // namespace fabtrain::bench
