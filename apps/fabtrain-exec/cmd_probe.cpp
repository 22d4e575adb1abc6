// fabtrain-exec probe --slice SLICE [--write | -o FILE]: measure a slice's links from its VMs.
// Launched by mpirun with one rank per VM of the slice, in the slice's VM order. For every pair
// of ranks: the round trip of a small message (median and 90th percentile, bench_network's
// ping-pong) and the TCP bandwidth with one stream and with --streams streams (tcp_streams.hpp),
// both by bench_network's measure_pairs, as `fabtrain-exec bench --tcp-streams N` measures them.
// Rank 0 turns the pairs between sites into measured links (per site pair the median over its VM
// pairs), prints them, and writes them into the slice file (--write) or a copy (-o), with the date
// and the method as each link's source.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <map>
#include <memory>

#include "command.hpp"
#include "common/error.hpp"
#include "exec/comm/mpi_communicator.hpp"
#include "exec/measure/bench_network.hpp"
#include "exec/measure/bench_timing.hpp"
#include "platforms/slice_links_file.hpp"

namespace fabtrain {
namespace {

struct ProbeOptions {
  std::string slice, output, catalog;
  bool write = false;
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

struct PairNumbers {
  double rtt = 0, rtt_p90 = 0, one_stream = 0, streams = 0;
};

std::vector<SiteLink> site_links(const Slice& slice,
                                 const std::map<std::pair<int, int>, PairNumbers>& pairs,
                                 const ProbeOptions& o, int samples) {
  std::map<std::pair<std::string, std::string>, std::vector<PairNumbers>> by_sites;
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> vm_pairs;
  for (const auto& [ranks, numbers] : pairs) {
    const Vm& a = slice.vms[ranks.first];
    const Vm& b = slice.vms[ranks.second];
    if (a.site == b.site) continue;
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
        "fabtrain-exec probe {}: MPI ping-pong of 8 B, {} round trips per VM pair (median, p90); "
        "TCP "
        "{:g} MiB over 1 and {} streams; median over VM pairs {}",
        today(), samples, o.tcp_mib, o.streams, vms);
    links.push_back(l);
  }
  return links;
}

void run(const ProbeOptions& o) {
  MpiCommunicator comm(nullptr, nullptr);
  try {
    const Catalog& catalog = catalog_with(o.catalog);
    const Slice slice = load_slice(o.slice, catalog);
    if (comm.size() != int(slice.vms.size()))
      fail("probe: launch one rank per VM of slice {} ({} VMs), in its order; mpirun started {}",
           slice.name, slice.vms.size(), comm.size());
    if (o.samples < 1) fail("--samples={} must be at least 1", o.samples);
    if (o.streams < 1) fail("--streams={} must be at least 1", o.streams);
    if (!(o.tcp_mib > 0)) fail("--tcp-mib={} must be positive", o.tcp_mib);
    std::vector<int> all(comm.size());
    for (int r = 0; r < comm.size(); ++r) all[r] = r;
    comm.set_groups({all});
    if (comm.rank() == 0)
      fmt::print(
          "probe: slice {} ({} VMs), {} round trips and TCP {:g} MiB over 1 and {} streams per "
          "pair\n",
          slice.name, slice.vms.size(), o.samples, o.tcp_mib, o.streams);

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
               "1 stream Gb/s", fmt::format("{} streams", o.streams));
    for (const auto& [ranks, n] : pairs)
      fmt::print("{:<24} {:>9.3f} {:>9.3f} {:>12.3f} {:>12.3f}\n",
                 slice.vms[ranks.first].name + "-" + slice.vms[ranks.second].name, n.rtt * 1e3,
                 n.rtt_p90 * 1e3, n.one_stream * 8 / 1e9, n.streams * 8 / 1e9);
    const auto links = site_links(slice, pairs, o, samples);
    if (links.empty()) fmt::print("\nno two VMs at different sites: no link to write\n");
    const std::string output = o.write ? slice.path : o.output;
    if (!output.empty() && !links.empty()) {
      write_slice_links(slice.path, links, output, catalog);
      fmt::print("\nwrote {} measured link(s) into {}\n", links.size(), output);
    } else if (!links.empty()) {
      fmt::print("\nmeasured links (--write puts them into the slice file):\n");
      for (const auto& l : links)
        fmt::print(
            "  {}-{}: rtt {:.3f} ms (p90 {:.3f}), {:.3f} Gbit/s ({} streams), {:.3f} Gbit/s (1 "
            "stream)\n",
            l.a, l.b, l.rtt_s * 1e3, l.rtt_p90_s * 1e3, l.bandwidth * 8 / 1e9, l.streams,
            l.bandwidth_one_stream * 8 / 1e9);
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
