// What a simulation tells people and programs: the JSON result (deterministic: same inputs give
// byte-identical text), the Chrome trace (plan/chrome_trace.hpp: the executor's processes,
// lanes and names, so a prediction opens next to a measurement), the human
// summary, and the time to train a number of tokens.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "models/model_spec.hpp"
#include "plan/schedule.hpp"
#include "platforms/slice.hpp"
#include "sim/simulator.hpp"

namespace fabtrain {

// Seconds to train tokens at the simulated throughput.
double time_to_train_s(const SimResult& result, double tokens);

nlohmann::json result_json(const SimResult& result, const Schedule& schedule,
                           const ModelSpec& model, const Slice& slice,
                           std::optional<double> train_tokens = std::nullopt);

// Needs a result simulated with SimOptions::trace.
nlohmann::json chrome_trace_json(const SimResult& result, const Schedule& schedule);

// A few lines for the terminal: step, tokens/s, TFLOP/s per GPU, MFU, breakdown, memory per
// GPU against capacity, the terms of the peak of the rank with the least free memory, and the
// OUT OF MEMORY or tight verdict (tight: less than memory_headroom of a GPU free).
std::string human_summary(const SimResult& result, const Schedule& schedule,
                          std::optional<double> train_tokens = std::nullopt,
                          double memory_headroom = 0);

// The terms of one rank's peak memory, one line: weights, gradients, optimizer state,
// activations at the peak, buffers in flight, and the framework's (context, cuBLAS workspace,
// allocator slack, communicator buffers).
std::string memory_terms(const RankMemory& m);

}  // namespace fabtrain
