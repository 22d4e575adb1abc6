#include "calibrate/coverage.hpp"

#include <fmt/format.h>

#include <set>

namespace fabtrain {
namespace {

std::string joined(const std::set<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// The link classes a slice's traffic uses: between GPUs of a VM, and its networks' kinds.
std::set<std::string> slice_link_classes(const Slice& slice) {
  std::set<std::string> out;
  for (const auto& vm : slice.vms)
    if (vm.gpus > 1) out.insert(vm.interconnect);
  for (const auto& n : slice.networks) out.insert(n.kind);
  return out;
}

}  // namespace

std::vector<std::string> calibration_warnings(const Calibration& cal, const Slice& slice) {
  std::vector<std::string> out;
  const std::string from = cal.source.empty() ? "the calibration" : cal.source;
  std::set<std::string> slice_types, covered, fitted_on;
  for (const auto& g : slice.gpus()) slice_types.insert(g.type->name);
  for (const auto& [type, kinds] : cal.compute) {
    fitted_on.insert(type);
    if (slice_types.count(type)) covered.insert(type);
  }
  std::set<std::string> missing;
  for (const auto& t : slice_types)
    if (!covered.count(t)) missing.insert(t);
  if (!cal.compute.empty() && !missing.empty())
    out.push_back(
        fmt::format("{} has no compute entries for {} (it has {}): the catalog's "
                    "efficiencies apply to them",
                    from, joined(missing), joined(fitted_on)));
  const bool corrections = !cal.collectives.empty() || cal.p2p.has_value();
  if (corrections && !fitted_on.empty() && covered.empty())
    out.push_back(fmt::format(
        "{}'s collective and point-to-point corrections were fitted with {}, none of this "
        "slice's {}: they are applied to hardware they were not measured on",
        from, joined(fitted_on), joined(slice_types)));
  std::set<std::string> classes = slice_link_classes(slice), missing_links, has_links;
  for (const auto& [name, link] : cal.links) has_links.insert(name);
  for (const auto& c : classes)
    if (!cal.links.count(c)) missing_links.insert(c);
  if (!cal.links.empty() && !missing_links.empty())
    out.push_back(
        fmt::format("{} has no link entries for {} (it has {}): the catalog's values apply to them",
                    from, joined(missing_links), joined(has_links)));
  if (cal.held_out_step_error && *cal.held_out_step_error > kUntrustedHeldOutError)
    out.push_back(fmt::format(
        "{}'s held-out step error is {:.1f}% (over {:.0f}%): its predictions, and so the "
        "ranking, are not trustworthy; calibrate from more runs on this slice's hardware",
        from, 100 * *cal.held_out_step_error, 100 * kUntrustedHeldOutError));
  return out;
}

}  // namespace fabtrain
