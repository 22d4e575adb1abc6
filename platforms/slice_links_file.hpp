// Writing measured links into a slice file (what `fabtrain-exec probe --write` does): the
// top-level `links:` section is replaced, or added at the end, and everything else in the file,
// comments included, stays as it was. Not here: reading links (slice_loader.cpp).
#pragma once
#include <string>
#include <vector>

#include "platforms/slice.hpp"

namespace fabtrain {

// The slice file's text with its links section holding `links` (one flow mapping per line).
std::string with_links(const std::string& slice_text, const std::vector<SiteLink>& links);

// Writes `slice_path`'s text with `links` to `output` (the same path to update it in place),
// through a temporary file that is first loaded back as a slice; throws naming what is wrong.
void write_slice_links(const std::string& slice_path, const std::vector<SiteLink>& links,
                       const std::string& output, const Catalog& catalog);

}  // namespace fabtrain
