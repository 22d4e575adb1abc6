// fabtrain-exec tokenize: the user's documents (text files, JSONL, globs) -> GPT-2 BPE tokens in
// llm.c shards with a validation split, on every core. Ctrl-C ends it with nothing written.
#include <fmt/format.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <memory>

#include "command.hpp"
#include "common/human_units.hpp"
#include "say.hpp"
#include "text/tokenize_corpus.hpp"
#include "text/vocab_files.hpp"
#include "text_options.hpp"

namespace fabtrain {
namespace {

std::atomic<bool> interrupted{false};
extern "C" void on_interrupt(int) { interrupted = true; }

void run(const text::TokenizeConfig& c) {
  const int width = table_width(false);
  say(width, stdout,
      "tokenize: {} -> {}/{}_{{val,train}}_*.bin, {} per shard, validation {}, vocabulary {}\n",
      counted(c.inputs.size(), "input pattern"), c.output_dir, c.name,
      counted(c.shard_tokens, "token"),
      c.val_inputs.empty() ? fmt::format("{:.1f}% of the documents", 100 * c.val_fraction)
                           : "from " + counted(c.val_inputs.size(), "pattern"),
      std::filesystem::proximate(text::vocab_dir(c.vocab)).string());
  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
  const text::TokenizeSummary s = text::tokenize_corpus(c, interrupted);
  say(width, stdout,
      "  {} ({} validation), {:.2f} MB in {:.2f} s ({:.1f} MB/s); tokens: {} train, {} "
      "validation\n",
      counted(s.documents, "document"), s.val_documents, double(s.bytes) / 1e6, s.seconds,
      s.seconds > 0 ? double(s.bytes) / 1e6 / s.seconds : 0.0, s.train_tokens, s.val_tokens);
  if (s.val_documents == 0)
    say(width, stdout,
        "  note: no validation documents (fewer than 1/--val-fraction documents, or 0)\n");
  for (const auto& shard : s.shards) say(width, stdout, "  wrote {}\n", shard);
}

Registration reg(30, [](CLI::App& app) {
  auto* cmd =
      app.add_subcommand("tokenize", "Text files or JSONL -> GPT-2 BPE tokens in llm.c shards");
  auto c = std::make_shared<text::TokenizeConfig>();
  cmd->add_option("inputs", c->inputs, "Text files (one document each), .jsonl files, globs")
      ->required();
  cmd->add_option("-o,--output-dir", c->output_dir, "Folder of the shards")->capture_default_str();
  cmd->add_option("--name", c->name,
                  "Shard name prefix: NAME_val_000000.bin, NAME_train_000001.bin")
      ->capture_default_str();
  cmd->add_option("--val", c->val_inputs, "Validation documents (then --val-fraction is not used)");
  cmd->add_option("--val-fraction", c->val_fraction,
                  "Fraction of the documents, evenly spaced, for validation")
      ->capture_default_str();
  cmd->add_option("--shard-tokens", c->shard_tokens, "Tokens per shard")->capture_default_str();
  add_text_field_option(cmd, c->fields);
  add_vocab_option(cmd, c->vocab);
  cmd->add_option("--threads", c->threads, "Threads (0: every core)")->capture_default_str();
  cmd->callback([c] { run(*c); });
});

}  // namespace
}  // namespace fabtrain
