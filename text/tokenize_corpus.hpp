// `fabtrain-exec tokenize`: documents -> GPT-2 tokens -> llm.c shards. Each document is the
// end-of-text token then its tokens; documents go to the validation split evenly spaced
// (val_fraction of them) or, when val_inputs are given, those documents form it. Encoding runs
// on all threads over batches of documents, large documents cut (next_cut in pretokenize.hpp)
// so that one big file uses every core too; text files are read in parts, so memory stays a
// few times the batch whatever the input's size, and an interrupt is seen within a part.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "text/documents.hpp"

namespace fabtrain::text {

struct TokenizeConfig {
  std::vector<std::string> inputs;
  std::vector<std::string> val_inputs;
  std::string output_dir = "tokens";
  std::string name = "corpus";
  double val_fraction = 0.05;
  std::int64_t shard_tokens = 100'000'000;  // llm.c's shard size
  DocumentFields fields;
  std::string vocab;
  int threads = 0;                      // 0: every core
  std::size_t batch_bytes = 32u << 20;  // text encoded per parallel round
  std::size_t part_bytes = 32u << 20;   // a text file is read in parts of at most this
};

struct TokenizeSummary {
  std::int64_t documents = 0, val_documents = 0, bytes = 0, train_tokens = 0, val_tokens = 0;
  double seconds = 0;
  std::vector<std::string> shards;
};

// stop: set asynchronously (an interrupt); the run then ends with an Error and writes nothing.
TokenizeSummary tokenize_corpus(const TokenizeConfig& config, const std::atomic<bool>& stop);

}  // namespace fabtrain::text
