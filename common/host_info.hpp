// What the executor says about the machine it runs on, for progress lines, run records and bench
// files.
#pragma once
#include <string>

namespace fabtrain {

// The CPU's model name from /proc/cpuinfo, or "unknown CPU".
std::string cpu_model();
// MemAvailable of /proc/meminfo in bytes, or 0 when it cannot be read.
double host_available_memory_bytes();

}  // namespace fabtrain
