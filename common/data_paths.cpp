// Data paths from comma lists and globs (see data_paths.hpp).
#include "common/data_paths.hpp"

#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "common/error.hpp"

namespace fabtrain {
namespace {

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    const std::size_t comma = s.find(',', start);
    const std::string part =
        s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!part.empty()) out.push_back(part);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// The name with each comma replaced by '?', a glob that matches it and is not split.
std::string glob_for_commas(std::string name) {
  std::replace(name.begin(), name.end(), ',', '?');
  return name;
}

}  // namespace

std::vector<std::string> expand_data_paths(const std::vector<std::string>& patterns) {
  std::vector<std::string> out;
  for (const std::string& list : patterns)
    // A name with a comma that exists is one file, not a list.
    for (const std::string& pattern :
         ::access(list.c_str(), F_OK) == 0 ? std::vector{list} : split_commas(list)) {
      glob_t g{};
      const int rc = ::glob(pattern.c_str(), GLOB_NOCHECK, nullptr, &g);
      std::vector<std::string> matched;
      if (rc == 0)
        for (std::size_t i = 0; i < g.gl_pathc; ++i) matched.emplace_back(g.gl_pathv[i]);
      globfree(&g);
      std::sort(matched.begin(), matched.end());
      for (const std::string& path : matched) {
        struct stat st {};
        if (::stat(path.c_str(), &st) != 0)
          fail("data file {}: no such file{}", path,
               list.find(',') == std::string::npos
                   ? ""
                   : fmt::format(" ('{}' is read as a comma-separated list; a file whose name "
                                 "has a comma is read whole when it exists, or give it as a glob: "
                                 "'{}')",
                                 list, glob_for_commas(list)));
        if (!S_ISREG(st.st_mode)) fail("data file {}: not a regular file", path);
        out.push_back(path);
      }
    }
  if (out.empty()) fail("no data files given");
  return out;
}

}  // namespace fabtrain
