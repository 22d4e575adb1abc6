// fabtrain-exec probe --slice SLICE [--write | -o FILE]: measure a slice's links from its VMs.
// Launched by mpirun with one rank per VM of the slice: a rank whose host name is a VM's name is
// that VM, else ranks follow the order the slice file lists its VMs in. For every pair
// of ranks: the round trip of a small message (median and 90th percentile, bench_network's
// ping-pong) and the TCP bandwidth with one stream and with --streams streams (tcp_streams.hpp),
// both by bench_network's measure_pairs, as `fabtrain-exec bench --tcp-streams N` measures them.
// Rank 0 turns the pairs between sites into measured links (per site pair the median over its VM
// pairs), prints them, and writes them into the slice file (--write) or a copy (-o), with the date
// and the method as each link's source. Two ranks on one host are no link between sites (left out,
// with a warning); a round trip written by hand on a network, which would override the measured
// link, is compared with the measurement and a difference is said.
#include <fmt/format.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <map>
#include <memory>
#include <set>

#include "command.hpp"
#include "common/error.hpp"
#include "common/human_units.hpp"
#include "exec/comm/mpi_check.hpp"
#include "exec/comm/mpi_communicator.hpp"
#include "exec/measure/bench_network.hpp"
#include "exec/measure/bench_timing.hpp"
#include "platforms/slice_links_file.hpp"
#include "say.hpp"

namespace fabtrain {
namespace {

struct ProbeOptions {
  std::string slice, output, catalog;
  bool write = false;
  bool shared_host_links = false;  // measure ranks of one host as a link (tests on one machine)
  int samples = 30;
  int streams = 4;
  double tcp_mib = 32;
  double budget_s = 3;
};

std::string today() {
  const std::time_t now = std::time(nullptr);
  char text[16];
  std::strftime(text, sizeof text, "%Y-%m-%d", std::gmtime(&now));
  return text;
}

// A written round trip further than this fraction from the measured one is said (an assumption:
// wide enough for a WAN path's day-to-day variation).
constexpr double kWrittenRttTolerance = 0.2;

struct PairNumbers {
  double rtt = 0, rtt_p90 = 0, one_stream = 0, streams = 0;
};

std::vector<SiteLink> site_links(const Slice& slice, const std::vector<int>& rank_vm,
                                 const std::vector<std::string>& hosts,
                                 const std::map<std::pair<int, int>, PairNumbers>& pairs,
                                 const ProbeOptions& o, int samples) {
  std::map<std::pair<std::string, std::string>, std::vector<PairNumbers>> by_sites;
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> vm_pairs;
  for (const auto& [ranks, numbers] : pairs) {
    const Vm& a = slice.vms[rank_vm[ranks.first]];
    const Vm& b = slice.vms[rank_vm[ranks.second]];
    if (a.site == b.site) continue;
    if (hosts[ranks.first] == hosts[ranks.second] && !o.shared_host_links) continue;
    const auto key = std::minmax(a.site, b.site);
    by_sites[key].push_back(numbers);
    vm_pairs[key].push_back(a.name + "-" + b.name);
  }
  std::vector<SiteLink> links;
  for (const auto& entry : by_sites) {  // no structured binding: clang 14 cannot capture one
    const auto& sites = entry.first;
    const auto& list = entry.second;
    auto med = [&](double PairNumbers::*field) {
      std::vector<double> v;
      for (const auto& p : list) v.push_back(p.*field);
      return bench::median(v);
    };
    SiteLink l;
    l.a = sites.first, l.b = sites.second;
    l.rtt_s = med(&PairNumbers::rtt);
    l.rtt_p90_s = std::max(l.rtt_s, med(&PairNumbers::rtt_p90));
    l.bandwidth_one_stream = med(&PairNumbers::one_stream);
    l.bandwidth = med(&PairNumbers::streams);
    l.streams = o.streams;
    std::string vms;
    for (const auto& v : vm_pairs[sites]) vms += (vms.empty() ? "" : ", ") + v;
    l.source = fmt::format(
        "fabtrain-exec probe {}: MPI ping-pong of 8 B, {} per VM pair (median, p90); TCP {:g} MiB "
        "over 1 stream and {}; median over VM pairs {}",
        today(), counted(samples, "round trip"), o.tcp_mib, counted(o.streams, "stream"), vms);
    links.push_back(l);
  }
  return links;
}

// Every rank's host name, on every rank.
std::vector<std::string> gather_host_names(int size) {
  char mine[256] = {};
  gethostname(mine, sizeof mine - 1);
  std::vector<char> all(256 * std::size_t(size));
  MPI_CHECK(MPI_Allgather(mine, 256, MPI_CHAR, all.data(), 256, MPI_CHAR, MPI_COMM_WORLD));
  std::vector<std::string> out;
  for (int r = 0; r < size; ++r) out.emplace_back(all.data() + 256 * std::size_t(r));
  return out;
}

// The VM (index into slice.vms) of each rank: by host name where every rank's host is a VM's
// name, else the file's order.
std::vector<int> ranks_to_vms(const Slice& slice, const std::vector<std::string>& hosts) {
  auto index_of = [&](const std::string& name) {
    for (std::size_t i = 0; i < slice.vms.size(); ++i)
      if (slice.vms[i].name == name) return int(i);
    return -1;
  };
  std::vector<int> by_host, by_file;
  for (std::size_t r = 0; r < hosts.size(); ++r) {
    by_host.push_back(index_of(hosts[r]));
    by_file.push_back(index_of(slice.vm_file_order.at(r)));
  }
  const bool named = std::all_of(by_host.begin(), by_host.end(), [](int v) { return v >= 0; }) &&
                     std::set<int>(by_host.begin(), by_host.end()).size() == by_host.size();
  return named ? by_host : by_file;
}

// Lines for what the measurement contradicts: ranks sharing a host, and a network's hand-written
// round trip (which overrides a measured link) far from the measured one.
std::vector<std::string> probe_warnings(const Slice& slice, const std::vector<int>& rank_vm,
                                        const std::vector<std::string>& hosts,
                                        const std::vector<SiteLink>& links, const ProbeOptions& o) {
  std::vector<std::string> out;
  for (std::size_t a = 0; a < hosts.size(); ++a)
    for (std::size_t b = a + 1; b < hosts.size(); ++b)
      if (hosts[a] == hosts[b])
        out.push_back(fmt::format("ranks {} and {} ({} and {}) share host {}: {}", a, b,
                                  slice.vms[rank_vm[a]].name, slice.vms[rank_vm[b]].name, hosts[a],
                                  o.shared_host_links
                                      ? "measured as a link anyway (--shared-host-links)"
                                      : "their pair is no link between sites and is left out; "
                                        "launch one rank per VM"));
  for (const auto& l : links)
    for (const auto& n : slice.networks) {
      const bool joins = std::find(n.sites.begin(), n.sites.end(), l.a) != n.sites.end() &&
                         std::find(n.sites.begin(), n.sites.end(), l.b) != n.sites.end();
      if (!joins || n.rtt_s < 0 || l.rtt_s <= 0) continue;
      if (std::abs(n.rtt_s - l.rtt_s) > kWrittenRttTolerance * l.rtt_s)
        out.push_back(fmt::format(
            "network {} gives rtt_ms {:.3g}, which overrides the {:.3g} ms measured between {} "
            "and {}: remove its rtt_ms to use the measurement",
            n.name, n.rtt_s * 1e3, l.rtt_s * 1e3, l.a, l.b));
    }
  return out;
}

void run(const ProbeOptions& o) {
  MpiCommunicator comm(nullptr, nullptr);
  try {
    const Catalog& catalog = catalog_with(o.catalog);
    const Slice slice = load_slice(o.slice, catalog);
    if (comm.size() != int(slice.vms.size()))
      fail(
          "probe: launch one rank per VM of slice {} ({}), in its file's order; mpirun started "
          "{}",
          slice.name, counted(slice.vms.size(), "VM"), counted(comm.size(), "rank"));
    const std::vector<std::string> hosts = gather_host_names(comm.size());
    const std::vector<int> rank_vm = ranks_to_vms(slice, hosts);
    if (o.samples < 1) fail("--samples={} must be at least 1", o.samples);
    if (o.streams < 1) fail("--streams={} must be at least 1", o.streams);
    if (!(o.tcp_mib > 0)) fail("--tcp-mib={} must be positive", o.tcp_mib);
    std::vector<int> all(comm.size());
    for (int r = 0; r < comm.size(); ++r) all[r] = r;
    comm.set_groups({all});
    const int width = table_width(false);
    if (comm.rank() == 0)
      say(width, stdout,
          "probe: slice {} ({}), {} and TCP {:g} MiB over 1 stream and {} per pair\n", slice.name,
          counted(slice.vms.size(), "VM"), counted(o.samples, "round trip"), o.tcp_mib,
          counted(o.streams, "stream"));

    bench::NetworkOptions net;
    net.latency_reps = o.samples;
    net.budget_s = o.budget_s;
    net.message_bytes = 1 << 20;
    net.messages = 1;
    net.stream_reps = 1;
    net.tcp_streams = o.streams;
    net.tcp_bytes = o.tcp_mib * (1 << 20);
    const auto measured = bench::measure_pairs(comm, net);  // the bench's own measurements

    std::map<std::pair<int, int>, PairNumbers> pairs;
    for (const auto& p : measured)
      pairs[{p.a, p.b}] = {p.rtt_s, p.rtt_p90_s, p.tcp_one_stream, p.tcp_streams};
    const int samples = measured.empty() ? 0 : measured.front().rtt_samples;
    comm.barrier();
    if (comm.rank() != 0) return;
    fmt::print("\n{:<24} {:>9} {:>9} {:>12} {:>12}\n", "VM pair", "rtt ms", "p90 ms",
               "1 stream Gb/s", counted(o.streams, "stream"));
    for (const auto& [ranks, n] : pairs)
      fmt::print("{:<24} {:>9.3f} {:>9.3f} {:>12.3f} {:>12.3f}\n",
                 slice.vms[rank_vm[ranks.first]].name + "-" + slice.vms[rank_vm[ranks.second]].name,
                 n.rtt * 1e3, n.rtt_p90 * 1e3, n.one_stream * 8 / 1e9, n.streams * 8 / 1e9);
    const auto links = site_links(slice, rank_vm, hosts, pairs, o, samples);
    for (const auto& w : probe_warnings(slice, rank_vm, hosts, links, o))
      say(width, stderr, "warning: {}\n", w);
    if (links.empty()) say(width, stdout, "\nno two VMs at different sites: no link to write\n");
    const std::string output = o.write ? slice.path : o.output;
    if (!output.empty() && !links.empty()) {
      write_slice_links(slice.path, links, output, catalog);
      say(width, stdout, "\nwrote {} into {}\n", counted(links.size(), "measured link"), output);
    } else if (!links.empty()) {
      say(width, stdout, "\nmeasured links (--write puts them into the slice file):\n");
      for (const auto& l : links)
        say(width, stdout,
            "  {}-{}: rtt {:.3f} ms (p90 {:.3f}), {:.3f} Gbit/s ({}), {:.3f} Gbit/s (1 "
            "stream)\n",
            l.a, l.b, l.rtt_s * 1e3, l.rtt_p90_s * 1e3, l.bandwidth * 8 / 1e9,
            counted(l.streams, "stream"), l.bandwidth_one_stream * 8 / 1e9);
    }
  } catch (const std::exception& e) {
    if (comm.size() > 1) comm.abort(e.what());
    throw;
  }
}

Registration reg(30, [](CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "probe",
      "Measure a slice's links (round trips, TCP bandwidth) from its VMs, one rank per VM");
  auto o = std::make_shared<ProbeOptions>();
  cmd->add_option("--slice", o->slice,
                  "The slice (built-in name or YAML file) whose VMs the ranks are")
      ->required();
  cmd->add_flag("--write", o->write, "Write the measured links into the slice file itself");
  cmd->add_flag("--shared-host-links", o->shared_host_links,
                "Write pairs of ranks on one host as links too (a test on one machine)");
  cmd->add_option("-o,--output", o->output,
                  "Write the slice with the measured links to this file instead");
  cmd->add_option("--catalog", o->catalog,
                  "Catalog YAML adding or replacing GPU types, NICs and sites");
  cmd->add_option("--samples", o->samples, "Round trips per pair")->capture_default_str();
  cmd->add_option("--streams", o->streams,
                  "Parallel TCP streams of the second bandwidth measurement")
      ->capture_default_str();
  cmd->add_option("--tcp-mib", o->tcp_mib, "MiB per TCP bandwidth measurement")
      ->capture_default_str();
  cmd->add_option("--budget-s", o->budget_s, "Time budget of each round-trip series, seconds")
      ->capture_default_str();
  cmd->callback([o] { run(*o); });
});

}  // namespace
}  // namespace fabtrain
