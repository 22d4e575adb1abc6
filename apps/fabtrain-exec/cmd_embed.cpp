// fabtrain-exec embed: documents (text files, JSONL with id and text) -> one vector each from a
// checkpoint, written as .npy with their ids, and a FAISS index for `search`. Built with FAISS.
#ifdef FABTRAIN_HAVE_FAISS
#include <fmt/format.h>

#include <memory>

#include "command.hpp"
#include "common/human_units.hpp"
#include "embed/embedding_dir.hpp"
#include "say.hpp"
#include "text_options.hpp"

namespace fabtrain {
namespace {

void run(const embed::EmbedConfig& c) {
  const int width = table_width(false);
  say(width, stdout, "embed: model {}, checkpoint {}, {} pooling -> {}/\n", c.model, c.checkpoint,
      c.pooling, c.output_dir);
  const embed::EmbedSummary s = embed::embed_documents(c);
  say(width, stdout, "  {}, {}, {} in {:.2f} s; index: {}\n", counted(s.documents, "document"),
      counted(s.tokens, "token"), counted(s.dimension, "dimension"), s.seconds, s.index);
  if (s.chunked > 0)
    say(width, stdout,
        "  {} longer than the context of {}: cut into chunks, the chunks' vectors averaged\n",
        counted(s.chunked, "document"), counted(s.context, "token"));
  say(width, stdout,
      "  wrote {0}/vectors.npy, {0}/documents.jsonl, {0}/index.faiss, {0}/embed.json\n",
      c.output_dir);
}

Registration reg(50, [](CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "embed", "Documents -> vectors (.npy) and a FAISS index, from a checkpoint");
  auto c = std::make_shared<embed::EmbedConfig>();
  cmd->add_option("inputs", c->inputs,
                  "Text files (one document each), .jsonl files (id, text), globs")
      ->required();
  cmd->add_option("--model", c->model, "Built-in model name or a Hugging Face config.json")
      ->capture_default_str();
  cmd->add_option("--checkpoint", c->checkpoint, "llm.c model checkpoint")->required();
  cmd->add_option("-o,--output-dir", c->output_dir, "Folder of the vectors and the index")
      ->capture_default_str();
  cmd->add_option("--pooling", c->pooling, "mean (of the final hidden states) or last (token)")
      ->capture_default_str();
  add_document_field_options(cmd, c->fields);
  cmd->add_option("--flat-max", c->index.flat_max,
                  "Exact (flat) index up to this many documents, IVF above")
      ->capture_default_str();
  cmd->add_option("--nlist", c->index.nlist, "IVF: clusters (0: about 4 sqrt(n))")
      ->capture_default_str();
  cmd->add_option("--nprobe", c->index.nprobe,
                  "IVF: clusters searched per query (0: nlist/8, at least 8)")
      ->capture_default_str();
  add_vocab_option(cmd, c->vocab);
  cmd->callback([c] { run(*c); });
});

}  // namespace
}  // namespace fabtrain
#endif
