// The study report's charts share one round scale with titled axes, and the
// page carries the study's measured figure, the assumptions, the version, date and command.
#include <doctest/doctest.h>

#include <regex>
#include <set>
#include <string>
#include <vector>

#include "selector/study_published.hpp"
#include "selector/study_report.hpp"

using namespace fabtrain;

namespace {
StudyCell cell(const std::string& cluster, const std::string& model, const std::string& technique,
               double tflops, double step_s) {
  StudyCell c{cluster, model, technique};
  c.tflops_per_gpu = tflops;
  c.step_time_s = step_s;
  c.tokens_per_s = 32 * 1024 / step_s;
  c.plan = "dp=4";
  return c;
}
std::vector<StudyCell> cells() {
  std::vector<StudyCell> out = {cell("tacc", "gpt2-medium", "data parallel", 7.3, 2.0),
                                cell("tacc", "gpt2-medium", "ZeRO-2", 6.1, 2.4),
                                cell("tacc", "gpt2-medium", "shard", 5.0, 2.9),
                                cell("tacc", "gpt2-medium", "pipeshard", 6.8, 2.1),
                                cell("utah-amst", "gpt2-medium", "data parallel", 0.5, 29.3),
                                cell("utah-amst", "gpt2-medium", "ZeRO-2", 0.4, 35.0),
                                cell("utah-amst", "gpt2-medium", "shard", 0.1, 90.0),
                                cell("utah-amst", "gpt2-medium", "pipeshard", 2.4, 6.1)};
  out[6].oom = true;
  out[6].note = "needs 30 GiB of 24 GiB";
  return out;
}
// The tick labels of an SVG chart: the text of <text ... text-anchor='end'> elements.
std::set<std::string> ticks_of(const std::string& svg) {
  std::set<std::string> out;
  const std::regex tick("text-anchor='end'>([0-9.]+)</text>");
  for (std::sregex_iterator it(svg.begin(), svg.end(), tick), end; it != end; ++it)
    out.insert((*it)[1]);
  return out;
}
}  // namespace

TEST_CASE("round axes: 1, 2, 2.5 or 5 times a power of ten, the top above the data") {
  CHECK(round_axis(7.3).step == doctest::Approx(2));
  CHECK(round_axis(7.3).top == doctest::Approx(8));
  CHECK(round_axis(10).top == doctest::Approx(10));
  CHECK(round_axis(10).step == doctest::Approx(2));
  CHECK(round_axis(0.37).step == doctest::Approx(0.1));
  CHECK(round_axis(0.37).top == doctest::Approx(0.4));
  CHECK(round_axis(123).step == doctest::Approx(25));
  CHECK(round_axis(123).top == doctest::Approx(125));
  CHECK(round_axis(0).top == doctest::Approx(1));
}

TEST_CASE("every cluster's chart has the same round scale and titled axes") {
  const auto svgs = study_svgs(cells());
  REQUIRE(svgs.size() == 2);
  CHECK(svgs[0].first == "tacc");
  CHECK(ticks_of(svgs[0].second) == ticks_of(svgs[1].second));
  CHECK(ticks_of(svgs[0].second) == std::set<std::string>{"0", "2", "4", "6", "8"});
  for (const auto& [cluster, svg] : svgs) {
    CHECK(svg.rfind("<svg xmlns='http://www.w3.org/2000/svg'", 0) == 0);  // a file on its own
    CHECK(svg.find("TFLOP/s per GPU (Alpa's formula)</text>") != std::string::npos);
    CHECK(svg.find(">model (every GPU of the cluster") != std::string::npos);
  }
  CHECK(svgs[1].second.find("out of memory: needs 30 GiB of 24 GiB") != std::string::npos);
}

TEST_CASE("the page puts the study's measurement beside the prediction and says how it was made") {
  StudyReportContext c;
  c.command = "fabtrain study --clusters tacc,utah-amst";
  c.version = "9.8.7";
  c.date = "2026-12-01 10:00 UTC";
  c.calibration = "none: the catalog's defaults";
  c.assumptions = {"every GPU of each cluster"};
  c.measured = load_study_measurement();
  CHECK(c.measured.ratio() == doctest::Approx(13.75));
  std::string html = study_html(cells(), c);
  CHECK(html.find("data parallel 1,375 min, pipeshard 100 min") != std::string::npos);
  CHECK(html.find("predicted 4.80&times;, measured 13.75&times;") !=
        std::string::npos);  // 29.3 / 6.1
  CHECK(html.find("give <code>--tokens</code>") != std::string::npos);
  CHECK(html.find("fabtrain study --clusters tacc,utah-amst") != std::string::npos);
  CHECK(html.find("9.8.7") != std::string::npos);
  CHECK(html.find("2026-12-01 10:00 UTC") != std::string::npos);
  CHECK(html.find("<li>every GPU of each cluster</li>") != std::string::npos);
  c.train_tokens = 32 * 1024 * 1000.0;  // 1000 steps: 29.3 s each are 488 min
  html = study_html(cells(), c);
  CHECK(html.find("<td>488</td>") != std::string::npos);
}
