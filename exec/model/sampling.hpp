// Text generation from a model: temperature and top-k sampling with a seeded generator
// (splitmix64, the same on every machine and standard library, so a seed gives the same tokens),
// one cached position per new token (exec/model/gpt2_infer.hpp). Not here: the tokenizer.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "exec/model/gpt2_infer.hpp"

namespace fabtrain {

struct SampleOptions {
  float temperature = 1.0f;  // 0: greedy (the most likely token)
  int top_k = 40;            // sample among the k most likely tokens; 0: all
  std::uint64_t seed = 1337;
  int max_tokens = 100;
  int stop_token = -1;  // generation ends (without it) when this token is drawn; -1: never
};

// The token drawn from logits: softmax(logits / temperature) over the top_k largest (ties by
// lower id), with u in [0, 1) from the caller's generator.
int sample_token(std::span<const float> logits, float temperature, int top_k, double u);

// Runs the prompt (at least one token), then draws up to max_tokens tokens, each fed back in;
// on_token(id) sees each as it comes. Stops early at stop_token or when the context is full.
// A prompt longer than the context is an Error.
std::vector<int> generate(Gpt2Inference& model, std::span<const int> prompt,
                          const SampleOptions& options,
                          const std::function<void(int)>& on_token = {});

}  // namespace fabtrain
