#include "selector/site_sets.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace fabtrain {
namespace {

// The VMs of a site as a comparable text: type, count, NIC, interconnect, and which earlier VM
// of the site shares its host.
std::string hardware_of(const Slice& slice, const std::string& site) {
  std::string out;
  std::vector<std::string> hosts;
  for (const auto& vm : slice.vms) {
    if (vm.site != site) continue;
    const auto shared = std::find(hosts.begin(), hosts.end(), vm.host);
    const long host = vm.host.empty() || shared == hosts.end() ? -1 : shared - hosts.begin();
    hosts.push_back(vm.host);
    out += vm.gpu + "x" + std::to_string(vm.gpus) + "/" + vm.nic + "/" + vm.interconnect + "/" +
           std::to_string(host) + ";";
  }
  return out;
}

const Vm& first_vm_at(const Slice& slice, const std::string& site) {
  return *std::find_if(slice.vms.begin(), slice.vms.end(),
                       [&](const Vm& vm) { return vm.site == site; });
}

// Whether `c` sees sites a and b alike: the same network kind, round trip and bandwidth.
bool alike_from(const Slice& slice, const std::string& a, const std::string& b,
                const std::string& c) {
  const Vm &va = first_vm_at(slice, a), &vb = first_vm_at(slice, b), &vc = first_vm_at(slice, c);
  const Network& na = slice.network_between(va.name, vc.name);
  const Network& nb = slice.network_between(vb.name, vc.name);
  if (na.kind != nb.kind) return false;
  const double ra = slice.site_rtt(na, a, c).value, rb = slice.site_rtt(nb, b, c).value;
  return std::abs(ra - rb) <= kRttToleranceS &&
         slice.site_bandwidth(na, a, c).value == slice.site_bandwidth(nb, b, c).value;
}

bool interchangeable(const Slice& slice, const std::vector<std::string>& sites,
                     const std::string& a, const std::string& b) {
  if (hardware_of(slice, a) != hardware_of(slice, b)) return false;
  for (const auto& c : sites)
    if (c != a && c != b && !alike_from(slice, a, b, c)) return false;
  return true;
}

// The set with each class's members replaced by its first ones, in slice order.
std::vector<std::string> canonical(const std::vector<std::string>& set,
                                   const std::vector<SiteClass>& classes,
                                   const std::vector<std::string>& order) {
  std::set<std::string> chosen;
  for (const auto& c : classes) {
    const auto n = std::count_if(c.sites.begin(), c.sites.end(), [&](const std::string& s) {
      return std::find(set.begin(), set.end(), s) != set.end();
    });
    chosen.insert(c.sites.begin(), c.sites.begin() + n);
  }
  std::vector<std::string> out;
  for (const auto& s : order)
    if (chosen.count(s)) out.push_back(s);
  return out;
}

double count_sets(const std::vector<SiteClass>& classes) {
  double n = 1;
  for (const auto& c : classes) n *= double(c.sites.size() + 1);
  return n - 1;
}

// Every combination of class counts (not all zero).
std::vector<std::vector<std::string>> every_set(const std::vector<SiteClass>& classes,
                                                const std::vector<std::string>& order) {
  std::vector<std::vector<std::string>> out;
  std::vector<std::size_t> take(classes.size(), 0);
  for (;;) {
    std::size_t k = 0;
    while (k < classes.size() && take[k] == classes[k].sites.size()) take[k++] = 0;
    if (k == classes.size()) return out;
    ++take[k];
    std::vector<std::string> set;
    for (std::size_t c = 0; c < classes.size(); ++c)
      set.insert(set.end(), classes[c].sites.begin(), classes[c].sites.begin() + take[c]);
    out.push_back(canonical(set, classes, order));
  }
}

double binomial(int n, int k) {
  double r = 1;
  for (int i = 1; i <= k; ++i) r = r * (n - k + i) / i;
  return r;
}

// Every subset of `items` of exactly k elements, as index lists.
void each_combination(int n, int k, const std::function<void(const std::vector<int>&)>& visit) {
  std::vector<int> idx(k);
  for (int i = 0; i < k; ++i) idx[i] = i;
  for (;;) {
    visit(idx);
    int i = k - 1;
    while (i >= 0 && idx[i] == n - k + i) --i;
    if (i < 0) return;
    ++idx[i];
    for (int j = i + 1; j < k; ++j) idx[j] = idx[j - 1] + 1;
  }
}

}  // namespace

std::vector<SiteClass> site_classes(const Slice& slice) {
  const auto sites = slice.site_names();
  std::vector<SiteClass> classes;
  for (const auto& s : sites) {
    auto it = std::find_if(classes.begin(), classes.end(), [&](const SiteClass& c) {
      return interchangeable(slice, sites, c.sites.front(), s);
    });
    if (it == classes.end())
      classes.push_back({{s}});
    else
      it->sites.push_back(s);
  }
  return classes;
}

SiteSets site_sets(const Slice& slice, const SetFloor& given_floor, bool weight_by_gpus) {
  // Without a floor: the inverse of the set's FP32 peak, a floor up to a constant factor.
  const SetFloor floor = given_floor ? given_floor : [&](const std::vector<std::string>& set) {
    double peak = 0;
    for (const auto& g : slice.gpus())
      if (std::find(set.begin(), set.end(), slice.vms[g.vm].site) != set.end())
        peak += g.type->peak_fp32_flops;
    return peak > 0 ? 1 / peak : 0.0;
  };
  const auto order = slice.site_names();
  const auto classes = site_classes(slice);
  SiteSets out;
  if (count_sets(classes) <= kExactSiteSets) {
    out.sets = every_set(classes, order);
    return out;
  }
  out.exact = false;
  const int n = int(order.size());
  std::set<std::vector<std::string>> family;
  auto add = [&](std::vector<std::string> set) { family.insert(canonical(set, classes, order)); };
  double budget = kExactSiteSets;
  while (out.drop + 1 < n && (budget -= binomial(n, out.drop + 1)) >= 0) ++out.drop;
  for (int d = 0; d <= out.drop; ++d)
    each_combination(n, d, [&](const std::vector<int>& left) {
      std::vector<std::string> set;
      for (int s = 0; s < n; ++s)
        if (std::find(left.begin(), left.end(), s) == left.end()) set.push_back(order[s]);
      add(set);
    });
  for (int a = 0; a < n; ++a) {
    // Grown from `a`: each time the site whose farthest member of the set is nearest.
    std::vector<std::string> set{order[a]};
    add(set);
    while (int(set.size()) < n) {
      std::string next;
      double best = 1e300;
      for (const auto& s : order) {
        if (std::find(set.begin(), set.end(), s) != set.end()) continue;
        double far = 0;
        for (const auto& m : set) far = std::max(far, pair_rtt_s(slice, m, s));
        if (far < best) best = far, next = s;
      }
      set.push_back(next);
      add(set);
    }
    for (int b = a + 1; b < n; ++b) add({order[a], order[b]});
  }
  out.sets.assign(family.begin(), family.end());
  // A set outside the family leaves out more than `drop` sites. Its floor is at least that of the
  // whole slice less the drop + 1 slowest sites (by time), or of the best single site (GPU-hours).
  std::vector<std::pair<double, std::string>> alone;
  for (const auto& s : order) alone.push_back({floor({s}), s});
  std::sort(alone.begin(), alone.end());
  if (weight_by_gpus) {
    out.left_out_floor = alone.front().first;
  } else {
    std::vector<std::string> kept;
    for (int i = 0; i < n - out.drop - 1; ++i) kept.push_back(alone[i].second);
    out.left_out_floor = kept.empty() ? alone.front().first : floor(kept);
  }
  return out;
}

}  // namespace fabtrain
