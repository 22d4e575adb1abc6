// Every file fabtrain writes (JSON, traces, reports, calibrations, checkpoints) goes to a
// temporary name next to it, is fsync'ed and renamed over the target: a full disk or a crash
// never leaves a truncated file under the real name, and a failed write is an Error (with the
// temporary file removed) instead of a silent exit 0.
#pragma once
#include <span>
#include <string>
#include <string_view>

namespace fabtrain {

// Writes bytes to path.tmp-<pid>, fsyncs it and renames it over path; `what` names the output in
// messages ("--json", "checkpoint").
void write_file_atomically(const std::string& path, std::span<const char> bytes,
                           std::string_view what = "output");
inline void write_text_atomically(const std::string& path, std::string_view text,
                                  std::string_view what = "output") {
  write_file_atomically(path, std::span<const char>(text.data(), text.size()), what);
}

}  // namespace fabtrain
