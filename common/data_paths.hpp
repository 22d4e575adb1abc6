// The data files a command names: comma-separated lists and shell globs, expanded into sorted,
// existing regular files. Shared by training data (exec/run/data_loader.hpp) and documents
// (text/documents.hpp). Not here: reading the files.
#pragma once
#include <string>
#include <vector>

namespace fabtrain {

// Expands comma-separated lists and shell globs ("data/*.bin") into sorted, existing paths;
// a pattern that matches nothing is an Error naming it. A name with a comma that exists is one
// file; a missing one is refused with the glob that passes it.
std::vector<std::string> expand_data_paths(const std::vector<std::string>& patterns);

}  // namespace fabtrain
