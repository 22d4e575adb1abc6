// One rule for the units people read, shared by every command: durations to train in hours
// below 100 h, then days; sizes in MiB below 1 GiB, then GiB.
#pragma once
#include <string>

namespace fabtrain {

// "0.42 h", "37.5 h", "6.3 d"; "-" for zero or less (nothing to train).
std::string format_train_time(double seconds);
// GPU-hours as a plain number with a precision that suits its size: "0.85", "12.3", "4210".
std::string format_gpu_hours(double gpu_hours);
// "640 MiB", "15.7 GiB".
std::string format_bytes(double bytes);
// Two sizes of one unit, as a memory column shows them: "15.7/24.0 GiB", "640/1024 MiB".
std::string format_bytes_of(double used, double capacity);
// A count and its noun, singular or plural: "1 GPU", "2 GPUs", "1 rank" (the noun's plural adds
// an s).
std::string counted(long long n, const std::string& noun);

}  // namespace fabtrain
