// Terminal progress line or plain lines (see progress.hpp).
#include "exec/run/progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>

namespace fabtrain {

Progress::Progress(int total_steps, int every, std::FILE* out)
    : total_(total_steps),
      every_(every < 1 ? 1 : every),
      out_(out),
      terminal_(::isatty(::fileno(out)) != 0 && !launched_by_mpi()) {}

// mpirun forwards rank 0's output through a pseudo-terminal even when its own output goes to a
// file, so under a launcher a terminal cannot be told apart: print plain lines there.
bool Progress::launched_by_mpi() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_RANK") ||
         std::getenv("SLURM_PROCID") || std::getenv("PMIX_RANK");
}

Progress::~Progress() { end_line(); }

std::string Progress::format_duration(double seconds) {
  if (!(seconds >= 0) || seconds > 1e8) return "?";
  const long s = long(seconds + 0.5);
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02d}s", s / 60, s % 60);
  return fmt::format("{}h{:02d}m", s / 3600, (s % 3600) / 60);
}

void Progress::end_line() {
  if (line_open_) {
    std::fputc('\n', out_);
    std::fflush(out_);
    line_open_ = false;
  }
}

void Progress::step(int step, float loss, double tokens_per_s, double step_s, float lr,
                    float grad_norm) {
  report(step, fmt::format("loss {:.4f} | lr {:.2e} | norm {:.3f}", loss, lr, grad_norm),
         tokens_per_s, step_s);
}

void Progress::timing_step(int step, double tokens_per_s, double step_s) {
  report(step, "timing only", tokens_per_s, step_s);
}

void Progress::report(int step, const std::string& values, double tokens_per_s, double step_s) {
  // The first step warms caches and allocates: leave it out of the ETA once there are others.
  if (step > 0 || total_ == 1) {
    elapsed_s_ += step_s;
    ++steps_timed_;
  }
  const double per_step = steps_timed_ > 0 ? elapsed_s_ / steps_timed_ : step_s;
  const double eta = per_step * double(total_ - step - 1);
  const std::string text = fmt::format("step {:>{}}/{} | {} | {:.0f} tok/s | {:.1f} ms | ETA {}",
                                       step + 1, std::to_string(total_).size(), total_, values,
                                       tokens_per_s, step_s * 1e3, format_duration(eta));
  if (terminal_) {
    std::fprintf(out_, "\r\033[K%s", text.c_str());
    line_open_ = true;
    if (step + 1 == total_) end_line();
    std::fflush(out_);
  } else if (step == 0 || (step + 1) % every_ == 0 || step + 1 == total_) {
    std::fprintf(out_, "%s\n", text.c_str());
    std::fflush(out_);
  }
}

void Progress::validation(int step, float val_loss) {
  end_line();
  std::fprintf(out_, "step %d: val loss %.4f\n", step + 1, val_loss);
  std::fflush(out_);
}

void Progress::message(const std::string& text) {
  end_line();
  std::fprintf(out_, "%s\n", text.c_str());
  std::fflush(out_);
}

}  // namespace fabtrain
