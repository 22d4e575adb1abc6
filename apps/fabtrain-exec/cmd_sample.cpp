// fabtrain-exec sample: text from an llm.c checkpoint: the prompt (after the end-of-text token
// that starts every training document), then tokens drawn with temperature and top-k from a
// seed, printed as they come. The same seed gives the same text.
#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "command.hpp"
#include "common/error.hpp"
#include "exec/model/model_file.hpp"
#include "exec/model/sampling.hpp"
#include "exec/model/trainable_model.hpp"
#include "text/vocab_files.hpp"
#include "text_options.hpp"

namespace fabtrain {
namespace {

struct SampleConfig {
  std::string model = "gpt2", checkpoint, prompt, vocab;
  SampleOptions options;
};

void run(const SampleConfig& c) {
  const ModelSpec model = load_trainable_model(c.model, "sample");
  const text::Gpt2Bpe bpe = text::load_gpt2_bpe(c.vocab);
  if (model.vocab_size != bpe.vocab_size())
    fail("sample: model {} has a vocabulary of {} tokens, GPT-2's tokenizer {}", model.name,
         model.vocab_size, bpe.vocab_size());
  Gpt2Inference infer(model, read_model_checkpoint(c.checkpoint, model));
  std::vector<int> prompt = {text::kEndOfText};
  for (int id : bpe.encode(c.prompt)) prompt.push_back(id);
  if (int(prompt.size()) > model.n_ctx)
    fail(
        "--prompt: {} tokens (and the end-of-text token before them) do not fit the context of {} "
        "tokens of "
        "model {}",
        prompt.size() - 1, model.n_ctx, model.name);
  std::fprintf(stderr,
               "sample: model %s, %s, prompt %zu tokens, temperature %g, top-k %d, seed %llu\n",
               model.name.c_str(), c.checkpoint.c_str(), prompt.size() - 1,
               double(c.options.temperature), c.options.top_k, (unsigned long long)c.options.seed);
  SampleOptions o = c.options;
  o.stop_token = text::kEndOfText;
  std::fwrite(c.prompt.data(), 1, c.prompt.size(), stdout);
  const std::vector<int> out = generate(infer, prompt, o, [&](int id) {
    const std::string& bytes = bpe.token_bytes(id);
    std::fwrite(bytes.data(), 1, bytes.size(), stdout);
    std::fflush(stdout);
  });
  std::fputc('\n', stdout);
  if (int(out.size()) < o.max_tokens)
    std::fprintf(stderr, "sample: stopped after %zu tokens (%s)\n", out.size(),
                 infer.position() == model.n_ctx ? "the context is full" : "end of text");
}

Registration reg(40, [](CLI::App& app) {
  auto* cmd =
      app.add_subcommand("sample", "Generate text from a checkpoint (temperature, top-k, seed)");
  auto c = std::make_shared<SampleConfig>();
  cmd->add_option("--model", c->model, "Built-in model name or a Hugging Face config.json")
      ->capture_default_str();
  cmd->add_option("--checkpoint", c->checkpoint, "llm.c model checkpoint")->required();
  cmd->add_option("--prompt", c->prompt, "Text to continue (empty: from the start of a document)");
  cmd->add_option("--temperature", c->options.temperature, "Softmax temperature (0: greedy)")
      ->capture_default_str();
  cmd->add_option("--top-k", c->options.top_k, "Sample among the k most likely tokens (0: all)")
      ->capture_default_str();
  cmd->add_option("--seed", c->options.seed, "Seed of the draws")->capture_default_str();
  cmd->add_option("--max-tokens", c->options.max_tokens, "Tokens to generate at most")
      ->capture_default_str();
  add_vocab_option(cmd, c->vocab);
  cmd->callback([c] { run(*c); });
});

}  // namespace
}  // namespace fabtrain
