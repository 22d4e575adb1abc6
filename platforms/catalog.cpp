// Catalog look-ups (by name, with errors that list what is known) and the inter-site latency:
// measured where the catalog has it, otherwise estimated from great-circle distance.
// Loading the file is catalog_loader.cpp.
#include "platforms/catalog.hpp"

#include <cmath>
#include <numbers>

#include "common/error.hpp"

namespace fabtrain {
namespace {

template <typename Map>
std::string known_names(const Map& map) {
  std::string out;
  for (const auto& [name, value] : map) out += (out.empty() ? "" : ", ") + name;
  return out;
}

template <typename Map>
const typename Map::mapped_type& find_named(const Map& map, const std::string& name,
                                            const char* what) {
  auto it = map.find(name);
  if (it == map.end()) fail("unknown {} '{}' (known: {})", what, name, known_names(map));
  return it->second;
}

constexpr double kEarthRadiusM = 6'371'000.0;  // mean radius
constexpr double kSpeedOfLightMPerS = 299'792'458.0;

}  // namespace

double great_circle_distance_m(const Site& a, const Site& b) {
  const double to_rad = std::numbers::pi / 180.0;
  const double lat1 = a.latitude * to_rad, lat2 = b.latitude * to_rad;
  const double dlat = lat2 - lat1, dlon = (b.longitude - a.longitude) * to_rad;
  // Haversine: well conditioned for short distances too.
  const double h = std::sin(dlat / 2) * std::sin(dlat / 2) +
                   std::cos(lat1) * std::cos(lat2) * std::sin(dlon / 2) * std::sin(dlon / 2);
  return 2 * kEarthRadiusM * std::asin(std::min(1.0, std::sqrt(h)));
}

const GpuType& Catalog::gpu(const std::string& name) const {
  return find_named(gpus, name, "GPU type");
}
const NicType& Catalog::nic(const std::string& name) const {
  return find_named(nics, name, "NIC type");
}
const Site& Catalog::site(const std::string& name) const { return find_named(sites, name, "site"); }
const LinkClass& Catalog::link_class(const std::string& name) const {
  return find_named(link_classes, name, "link class");
}

const CommunicatorProfile& Catalog::communicator(const std::string& name) const {
  return find_named(communicators, name, "communicator profile");
}

const FrameworkMemory& Catalog::framework_memory_profile(const std::string& name) const {
  return find_named(framework_memory, name.empty() ? default_framework_memory : name,
                    "framework memory profile");
}

double FrameworkMemory::context_for(const std::string& gpu_type) const {
  const auto it = context_bytes_by_gpu.find(gpu_type);
  return it == context_bytes_by_gpu.end() ? context_bytes : it->second;
}

SiteLatency Catalog::latency(const std::string& a, const std::string& b) const {
  const Site& site_a = site(a);
  const Site& site_b = site(b);
  if (a == b) return {a, b, 0.0, false, "same site: no wide-area round trip"};
  for (const auto& l : latencies)
    if ((l.a == a && l.b == b) || (l.a == b && l.b == a))
      return {a, b, l.rtt_s, l.measured, l.source};
  const LatencyEstimate& e = latency_estimate;
  const double path_m = great_circle_distance_m(site_a, site_b) * e.route_factor;
  const double rtt =
      2 * path_m / (e.fibre_fraction_of_c * kSpeedOfLightMPerS) + e.switching_allowance_s;
  return {a, b, rtt, false,
          fmt::format("estimated from {:.0f} km great-circle distance ({})",
                      great_circle_distance_m(site_a, site_b) / 1000, e.source)};
}

}  // namespace fabtrain
