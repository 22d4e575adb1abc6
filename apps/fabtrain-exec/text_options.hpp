// The options of the subcommands that read text, worded once: where GPT-2's vocabulary is, and
// which fields of a JSONL document hold its text and its id.
#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "text/documents.hpp"

namespace fabtrain {

inline void add_vocab_option(CLI::App* cmd, std::string& vocab) {
  cmd->add_option("--vocab", vocab,
                  "Folder of encoder.json and vocab.bpe (default: install-deps' folder)");
}

inline void add_text_field_option(CLI::App* cmd, text::DocumentFields& fields) {
  cmd->add_option("--text-field", fields.text, "JSONL: the field holding the text")
      ->capture_default_str();
}

inline void add_document_field_options(CLI::App* cmd, text::DocumentFields& fields) {
  add_text_field_option(cmd, fields);
  cmd->add_option("--id-field", fields.id, "JSONL: the field holding the id")
      ->capture_default_str();
}

}  // namespace fabtrain
