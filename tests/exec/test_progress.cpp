// The progress line: a training step shows its loss, a replayed step (no model math) says it is
// timing only instead of printing zeros as if they were a loss.
#include <doctest/doctest.h>

#include <cstdio>
#include <string>

#include "exec/run/progress.hpp"

using namespace fabtrain;

namespace {

std::string printed(void (*write)(Progress&)) {
  std::FILE* file = std::tmpfile();  // not a terminal: plain lines
  REQUIRE(file != nullptr);
  {
    Progress progress(2, 1, file);
    write(progress);
  }
  std::rewind(file);
  std::string text;
  char buffer[256];
  while (std::fgets(buffer, sizeof buffer, file)) text += buffer;
  std::fclose(file);
  return text;
}

}  // namespace

TEST_CASE("progress: a trained step prints its loss, a replayed one says timing only") {
  const std::string trained =
      printed([](Progress& p) { p.step(0, 2.5f, 1000, 0.25, 3e-4f, 0.75f); });
  CHECK(trained.find("step 1/2 | loss 2.5000 | lr 3.00e-04 | norm 0.750 | 1000 tok/s | 250.0 ms") !=
        std::string::npos);
  const std::string replayed = printed([](Progress& p) {
    p.timing_step(0, 500, 2.0);
    p.timing_step(1, 500, 2.0);
  });
  CHECK(replayed.find("step 1/2 | timing only | 500 tok/s | 2000.0 ms") != std::string::npos);
  CHECK(replayed.find("step 2/2 | timing only") != std::string::npos);
  CHECK(replayed.find("loss") == std::string::npos);
}
