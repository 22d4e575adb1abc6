// Parallel tokenizing into shards (see tokenize_corpus.hpp).
#include "text/tokenize_corpus.hpp"

#include <omp.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string_view>

#include "common/error.hpp"
#include "common/limits.hpp"
#include "text/gpt2_bpe.hpp"
#include "text/pretokenize.hpp"
#include "text/shard_writer.hpp"
#include "text/vocab_files.hpp"

namespace fabtrain::text {
namespace {

constexpr std::size_t kUnitBytes = 1u << 20;  // work unit: a document or a part of one

struct Batch {
  std::vector<Document> docs;
  std::vector<Split> splits;
  std::size_t bytes = 0;
};

class Tokenizer {
 public:
  Tokenizer(const TokenizeConfig& c, const std::atomic<bool>& stop)
      : config_(c),
        stop_(stop),
        bpe_(load_gpt2_bpe(c.vocab)),
        writer_(c.output_dir, c.name, c.shard_tokens),
        start_(std::chrono::steady_clock::now()) {
    threads_ = c.threads > 0 ? c.threads : omp_get_num_procs();
    caches_.resize(std::size_t(threads_));
    terminal_ = ::isatty(fileno(stderr));
  }

  void add(Document&& doc, Split split) {
    if (stop_) fail("interrupted: no shard was written (the folder is as it was)");
    if (!doc.continues) {
      summary_.documents++;
      if (split == Split::val) summary_.val_documents++;
    }
    summary_.bytes += std::int64_t(doc.text.size());
    batch_.bytes += doc.text.size();
    batch_.docs.push_back(std::move(doc));
    batch_.splits.push_back(split);
    if (batch_.bytes >= config_.batch_bytes) flush();
  }

  TokenizeSummary finish() {
    flush();
    if (stop_) fail("interrupted: no shard was written (the folder is as it was)");
    summary_.shards = writer_.commit();
    summary_.train_tokens = writer_.tokens(Split::train);
    summary_.val_tokens = writer_.tokens(Split::val);
    summary_.seconds = elapsed();
    if (progress_shown_ && terminal_) std::fputc('\n', stderr);
    return summary_;
  }

  void set_total_bytes(std::int64_t total) { total_bytes_ = total; }

 private:
  double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

  void flush() {
    if (batch_.docs.empty()) return;
    // Work units: (document, byte range), documents cut at safe points into ~1 MiB parts.
    struct Unit {
      std::size_t doc, begin, end;
    };
    std::vector<Unit> units;
    for (std::size_t d = 0; d < batch_.docs.size(); ++d) {
      const std::string_view text = batch_.docs[d].text;
      for (std::size_t begin = 0; begin < text.size();) {
        const std::size_t end = next_cut(text, begin + kUnitBytes, begin + 2 * kUnitBytes);
        units.push_back({d, begin, end});
        begin = end;
      }
    }
    std::vector<std::vector<std::uint16_t>> ids(units.size());
    std::exception_ptr error;  // an exception may not leave the parallel loop
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads_)
    for (std::size_t u = 0; u < units.size(); ++u) {
      if (stop_) continue;
      const Unit& unit = units[u];
      const std::string_view text = batch_.docs[unit.doc].text;
      try {
        bpe_.encode(text.substr(unit.begin, unit.end - unit.begin), ids[u],
                    caches_[std::size_t(omp_get_thread_num())]);
      } catch (...) {
#pragma omp critical
        if (!error) error = std::current_exception();
      }
    }
    if (error) std::rethrow_exception(error);
    if (stop_) fail("interrupted: no shard was written (the folder is as it was)");
    const std::uint16_t eot = kEndOfText;
    std::size_t u = 0;
    for (std::size_t d = 0; d < batch_.docs.size(); ++d) {
      if (!batch_.docs[d].continues) writer_.add(batch_.splits[d], {&eot, 1});
      for (; u < units.size() && units[u].doc == d; ++u) writer_.add(batch_.splits[d], ids[u]);
    }
    done_bytes_ += std::int64_t(batch_.bytes);
    batch_ = Batch{};
    show_progress();
  }

  // Long runs only: on a terminal one line updated in place after the first second, otherwise a
  // line every 10 s.
  void show_progress() {
    const double t = elapsed();
    if (t - last_progress_ < (terminal_ ? 1 : 10)) return;
    last_progress_ = t;
    progress_shown_ = true;
    const double mb = double(done_bytes_) / 1e6;
    std::fprintf(stderr, "%stokenize: %.1f of %.1f MB, %lld tokens, %.1f MB/s%s",
                 terminal_ ? "\r" : "", mb, double(total_bytes_) / 1e6,
                 (long long)(writer_.tokens(Split::train) + writer_.tokens(Split::val)),
                 t > 0 ? mb / t : 0.0, terminal_ ? "   " : "\n");
    std::fflush(stderr);
  }

  const TokenizeConfig& config_;
  const std::atomic<bool>& stop_;
  Gpt2Bpe bpe_;
  ShardWriter writer_;
  std::chrono::steady_clock::time_point start_;
  int threads_ = 1;
  std::vector<Gpt2Bpe::Cache> caches_;
  Batch batch_;
  TokenizeSummary summary_;
  std::int64_t total_bytes_ = 0, done_bytes_ = 0;
  bool terminal_ = false, progress_shown_ = false;
  double last_progress_ = 0;
};

std::int64_t total_size(const std::vector<std::string>& paths) {
  std::int64_t total = 0;
  for (const auto& p : paths) total += std::int64_t(std::filesystem::file_size(p));
  return total;
}

}  // namespace

TokenizeSummary tokenize_corpus(const TokenizeConfig& config, const std::atomic<bool>& stop) {
  if (config.val_fraction < 0 || config.val_fraction >= 1)
    fail("--val-fraction={} must be in [0, 1)", config.val_fraction);
  if (config.threads < 0) fail("--threads={} must be 0 (every core) or more", config.threads);
  check_limit("--threads", config.threads, limits::threads);
  const std::vector<std::string> paths = document_paths(config.inputs);
  std::vector<std::string> val_paths;
  if (!config.val_inputs.empty()) val_paths = document_paths(config.val_inputs);
  Tokenizer tokenizer(config, stop);
  tokenizer.set_total_bytes(total_size(paths) + total_size(val_paths));

  // Evenly spaced: document i goes to validation when floor((i+1) f) > floor(i f).
  const double f = val_paths.empty() ? config.val_fraction : 0.0;
  std::int64_t index = 0;
  Split split = Split::train;  // a document's parts stay in its split
  read_documents(
      paths, config.fields,
      [&](Document&& doc) {
        if (!doc.continues) {
          const bool val = std::int64_t((index + 1) * f) > std::int64_t(index * f);
          ++index;
          split = val ? Split::val : Split::train;
        }
        tokenizer.add(std::move(doc), split);
      },
      config.part_bytes);
  if (!val_paths.empty())
    read_documents(
        val_paths, config.fields,
        [&](Document&& doc) { tokenizer.add(std::move(doc), Split::val); }, config.part_bytes);
  return tokenizer.finish();
}

}  // namespace fabtrain::text
