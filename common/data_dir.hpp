// Where built-in data files (platform catalog, slices, corpora) are found: $FABTRAIN_DATA_DIR if
// set, else the source tree the programs were built from.
#pragma once
#include <cstdlib>
#include <string>

namespace fabtrain {

inline std::string source_dir() {
  if (const char* env = std::getenv("FABTRAIN_SOURCE_DIR")) return env;
  return FABTRAIN_SOURCE_DIR;
}

}  // namespace fabtrain
