// The largest inputs fabtrain handles, stated once, each with why. The parsers check them (slice,
// model, plan, options, records), so no size read from a file or a flag can overflow an int,
// hang the compiler or the search, or ask for more memory than a host has.
// A refusal reads "X is N; fabtrain handles at most M (why)".
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace fabtrain {

struct Limit {
  std::int64_t max;
  const char* why;
};

namespace limits {
// Every GPU is a SimGrid host and a rank an actor; the search tries subsets of them. The bench's
// 1024-GPU step simulates in about a second, and 5,000 GPUs took 16 s and 2.6 GB just to search.
// Every command that reads a slice (slice show, slice import, schedule, simulate, the searches)
// refuses one past it; simulate and schedule run at it (tests/selector/limits.sh: a 1024-rank
// GPT-2 medium step of 16 VMs of 8 GPUs at 8 sites within 60 s and 4 GiB each).
inline constexpr Limit gpus{1024, "one rank per GPU; the simulator plays one actor per rank"};
// What a search (plan, recommend, advise, study) takes: it compiles and bounds the plans of many
// GPU subsets and simulates the best of them, each a SimGrid run of one actor per rank, so its
// time and memory grow with the GPUs and their sites far faster than one simulation's. Measured
// on 2 cores with GPT-2 medium (docs/results/2026-12-03-limits.md): at 8 sites of 16 GPUs plan
// in 47 s and 1.2 GB, recommend in 30 s and 0.6 GB; advise on FABRIC's 76 free GPUs at 26 sites
// in 48 s. FABRIC lists about 150 GPUs in all, fewer free at once. plan and recommend refuse a
// slice past it, study a cluster past it, advise an availability file with more free GPUs at
// the sites it uses; tests/selector/limits.sh runs plan and recommend at 128 GPUs within 120 s,
// advise (three searches) within 240 s, each under 4 GiB, and expects each refusal at 129. study
// runs one search per technique per cluster and model, so its time is that of several plans.
inline constexpr Limit searched_gpus{
    128,
    "a search compiles and simulates hundreds of plans; at 128 GPUs plan and recommend finish "
    "within 2 minutes and advise within 4, each within 4 GiB on 2 cores; simulate and schedule "
    "take slices of up to 1024"};
// dp, tp, pp and their product: one rank per GPU, so no degree exceeds the GPUs fabtrain handles.
inline constexpr Limit ranks{1024, "one rank per GPU of a slice"};
// A schedule holds about 2 x layers x microbatches instructions per rank.
inline constexpr Limit layers{1024, "the schedule lists every layer; GPT-2 xl has 48"};
inline constexpr Limit microbatches{1024, "the schedule lists every microbatch of every stage"};
// 12 x hidden^2 parameters per layer must stay far inside 64-bit counts and byte sizes.
inline constexpr Limit hidden{65536,
                              "parameter and byte counts stay within 64 bits; GPT-2 xl has 1600"};
// n_inner: GPT-2's MLP is 4 x hidden wide; the same 64-bit margin at the largest hidden size.
inline constexpr Limit mlp_width{
    4 * 65536, "parameter and byte counts stay within 64 bits; GPT-2 xl has 6400"};
inline constexpr Limit heads{65536, "at most one head per hidden unit"};
// Token ids of llm.c shards are 16-bit; a model may be simulated with more, but not without end.
inline constexpr Limit vocabulary{1 << 20,
                                  "the embedding table stays within host memory; GPT-2 has 50257"};
// batch x sequence (tokens of a step) must fit a 32-bit count: 65536 x 16384 = 2^30.
inline constexpr Limit sequence{16384, "tokens per step stay within 2^30; GPT-2's context is 1024"};
inline constexpr Limit batch{65536, "tokens per step stay within 2^30; the study used 8 per GPU"};
// A gradient bucket in MiB: larger than any model's parameters is refused by validate(); this
// only keeps the MiB-to-bytes product far inside 64 bits (1 TiB of parameters).
inline constexpr Limit bucket_mib{1 << 20, "a bucket holds parameters; 1 TiB is beyond any model"};
// A compiled step in memory and in the simulator: about 100 bytes and one simulated activity per
// instruction; the 1024-GPU step of bench_sim holds about 300,000.
inline constexpr Limit instructions{1 << 24, "each is kept in memory and played by the simulator"};
// JSON nesting: nlohmann copies and writes nested values recursively, so a hundred thousand
// brackets overflow the stack. fabtrain's own files nest 4 levels, FIM's attributes 3.
inline constexpr Limit json_depth{256,
                                  "nested values are read recursively; fabtrain's files nest "
                                  "at most 4 levels"};
// Files read whole into memory, per kind of input.
inline constexpr Limit json_file_bytes{256 << 20,
                                       "JSON inputs are configs and records of a few MB"};
inline constexpr Limit saved_slice_bytes{
    64 << 20, "a saved fablib slice is read whole; one of 1024 GPUs takes a few MB"};
// GraphML: XML depth (a FIM graph is 4 elements deep), one attribute's text (FIM's largest, a
// VM's LabelAllocations, is under a kilobyte), vertices and edges (about 10 of each per VM).
inline constexpr Limit xml_depth{64, "a saved fablib slice is 4 elements deep"};
inline constexpr Limit graph_attribute_bytes{
    1 << 20, "FIM's attributes are short names and JSON of under a kilobyte"};
inline constexpr Limit graph_elements{200'000,
                                      "a 1024-GPU slice has about 10 vertices and edges per VM"};
// Threads of a command (tokenize): one per core; hosts have at most a few hundred cores.
inline constexpr Limit threads{1024, "one thread per core"};
// Physical ranges of a network: the longest round trips on Earth (geostationary satellite) are
// about 600 ms; the fastest links are a few Tbit/s.
inline constexpr double rtt_ms_max = 10000;
inline constexpr double bandwidth_gbit_s_max = 100000;
inline constexpr double tcp_window_mib_max = 16384;
}  // namespace limits

// Fails with "`what` is `value`; fabtrain handles at most `limit.max` (`limit.why`)".
void check_limit(std::string_view what, std::int64_t value, const Limit& limit);
// Fails when the file at `path` is larger than `limit` bytes, naming `what` (reads nothing).
void check_file_size(const std::string& path, std::string_view what, const Limit& limit);

}  // namespace fabtrain
