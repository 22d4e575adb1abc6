// The range of every numeric option of both programs, by name, stated once: a value outside is
// refused while the command line is read, with the flag, the value and the range
// ("--seq: -1 is out of range [1, 16384]"). Options whose rule depends on other values (--top,
// --tolerance) keep their own check in the command. Ranges come from common/limits.hpp where a
// limit exists; the others are physical ("a time budget of more than an hour") or counts far past
// any use, so that no value can overflow, hang or ask for more memory than a host has.
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/error.hpp"
#include "common/limits.hpp"
#include "common/strict_number.hpp"

namespace fabtrain {

struct OptionRange {
  std::string_view flag;
  double min, max;
  bool above_min = false;  // min itself is excluded: (min, max]
  bool below_max = false;  // max itself is excluded: [min, max)
};

namespace option_ranges {
inline constexpr double kCount = 1e9;        // steps, repeats, messages: far past any run
inline constexpr double kMib = 1 << 20;      // a buffer of 1 TiB
inline constexpr double kBytes = 1ll << 40;  // 1 TiB
inline constexpr double kSeconds = 86'400;   // a day
inline constexpr double kTokens = 1e18;      // a million times the largest corpora
inline constexpr double kThreads = double(limits::threads.max);

inline constexpr OptionRange table[] = {
    // the model and the batch (fabtrain and fabtrain-exec)
    {"--batch", 1, double(limits::batch.max)},
    {"--seq", 1, double(limits::sequence.max)},
    {"--rank", 0, double(limits::ranks.max - 1)},
    // time to train and the search
    {"--tokens", 0, kTokens, true},
    {"--epochs", 0, 1e6, true},
    {"--dataset-tokens", 0, kTokens, true},
    {"--wan-latency-ms", 0, limits::rtt_ms_max},
    {"--workers", 1, kThreads},
    // calibrate
    {"--path-rtt-ms", 0, limits::rtt_ms_max},
    {"--bench-path-rtt-ms", 0, limits::rtt_ms_max},
    {"--run-path-rtt-ms", 0, limits::rtt_ms_max},
    {"--small-collective-bytes", 0, kBytes},
    // train and replay
    {"--steps", 1, kCount},
    {"--lr", 0, 10, true},
    {"--warmup", 0, kCount},
    {"--lr-min-fraction", 0, 1},
    {"--weight-decay", 0, 10},
    {"--grad-clip", 0, 1e9},
    {"--checkpoint-every", 0, kCount},
    {"--keep-checkpoints", 0, kCount},
    {"--stop-after", 0, kCount},
    {"--val-every", 0, kCount},
    {"--val-batches", 1, kCount},
    {"--timeout-s", 0, kSeconds},
    {"--threads", 0, kThreads},
    {"--print-every", 1, kCount},
    // bench, probe, overlap-bench
    {"--budget-s", 0, kSeconds, true},
    {"--memory-mib", 0, kMib, true},
    {"--latency-bytes", 1, kBytes},
    {"--message-bytes", 1, kBytes},
    {"--p2p-mib", 0, kMib, true},
    {"--p2p-messages", 1, kCount},
    {"--tcp-streams", 0, kThreads},
    {"--tcp-mib", 0, kMib, true},
    {"--transfer-mib", 0, 1024, true},  // one MPI message: under 2^31 bytes
    {"--collective-mib", 0, kMib, true},
    {"--samples", 1, kCount},
    {"--streams", 1, kThreads},
    {"--mib", 0, kMib, true},
    {"--blocks", 1, kCount},
    {"--block-ms", 0, 1000 * kSeconds, true},
    {"--repeats", 1, kCount},
    {"--poll-us", 1, 1e6 * kSeconds},
    // tokenize, sample, embed, search
    {"--val-fraction", 0, 1, false, true},
    {"--shard-tokens", 1, double(INT32_MAX)},
    {"--temperature", 0, 100},
    {"--top-k", 0, double(limits::vocabulary.max)},
    {"--max-tokens", 1, kCount},
    {"--flat-max", 0, kCount},
    {"--nlist", 0, kCount},
    {"--nprobe", 0, kCount},
    // memory headroom (a fraction of a GPU left free), advise's caps, generated slices
    {"--memory-headroom", 0, 1, false, true},
    {"--max-gpus", 0, double(limits::gpus.max)},
    {"--max-sites", 0, 1000},
    {"--gpus-per-vm", 0, 64},
    {"--sites", 1, 1000},
    {"-k", 1, kCount},
};
}  // namespace option_ranges

// "[1, 16384]", "(0, 86400]", "[0, 1)".
inline std::string describe(const OptionRange& r) {
  return fmt::format("{}{}, {}{}", r.above_min ? '(' : '[', r.min, r.max, r.below_max ? ')' : ']');
}

// A validator refusing a number outside the range; text that is no number passes here and is
// refused by the strict reader (strict_options.hpp) with its own words.
inline CLI::Validator within(const OptionRange& r) {
  return CLI::Validator(
      [r](std::string& text) -> std::string {
        double v = 0;
        try {
          v = strict_finite(text, "value");
        } catch (const Error&) {
          return "";
        }
        const bool in =
            (r.above_min ? v > r.min : v >= r.min) && (r.below_max ? v < r.max : v <= r.max);
        return in ? "" : fmt::format("{} is out of range {}", text, describe(r));
      },
      describe(r));
}

// Adds each option's range from the table, in every subcommand.
inline void apply_option_ranges(CLI::App& app) {
  for (CLI::Option* option : app.get_options())
    for (const OptionRange& r : option_ranges::table)
      if (option->check_name(std::string(r.flag))) option->check(within(r));
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    apply_option_ranges(*sub);
}

}  // namespace fabtrain
