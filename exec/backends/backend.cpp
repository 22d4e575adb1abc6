// The backend registry (see backend.hpp): a map filled before main by the registrations.
#include "exec/backends/backend.hpp"

#include <map>

#include "common/error.hpp"

namespace fabtrain {
namespace {

std::map<std::string, BackendEntry>& registry() {
  static std::map<std::string, BackendEntry> entries;  // built on first use: any TU order works
  return entries;
}

}  // namespace

BackendRegistration::BackendRegistration(BackendEntry entry) {
  const std::string name = entry.name;
  if (!registry().emplace(name, std::move(entry)).second)
    fail("backend {} is registered twice (two object files register it)", name);
}

std::vector<std::string> backend_names() {
  std::vector<std::string> names;
  for (const auto& [name, entry] : registry()) names.push_back(name);
  return names;
}

const BackendEntry& find_backend(const std::string& name) {
  const auto it = registry().find(name);
  if (it == registry().end()) {
    std::string built;
    for (const std::string& known : backend_names()) built += (built.empty() ? "" : ", ") + known;
    fail("--device {}: not built here (this build has: {})", name, built.empty() ? "none" : built);
  }
  return it->second;
}

}  // namespace fabtrain
