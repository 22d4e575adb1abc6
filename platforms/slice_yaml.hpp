// A slice as its file states it (name, description, assumptions, VMs, networks), written as the
// YAML text load_slice() reads: what `slice import`, `advise` and the slice generator write.
// Not here: reading slices (slice.hpp).
#pragma once
#include <string>
#include <vector>

#include "platforms/catalog.hpp"
#include "platforms/slice.hpp"

namespace fabtrain {

struct SliceDraft {
  std::string comment;  // the file's first line, "" for none
  std::string name, description;
  std::vector<std::string> assumptions;
  std::vector<Vm> vms;
  std::vector<std::string> vm_comments;  // one per VM ("" for none), or empty
  std::vector<Network> networks;         // rtt_s, bandwidth and window are not written
};

std::string to_slice_yaml(const SliceDraft& draft);

// Writes the draft to `path` and loads it back, so that what was written is a valid slice;
// throws fabtrain::Error naming the file when it is not.
Slice write_slice(const SliceDraft& draft, const std::string& path, const Catalog& catalog);

}  // namespace fabtrain
