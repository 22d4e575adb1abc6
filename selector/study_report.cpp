// The study's figures as predictions: table rows and an HTML page (see study_report.hpp).
#include "selector/study_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "selector/study_rule.hpp"

namespace fabtrain {

static const std::vector<std::string> kTechniques = {"data parallel", "ZeRO-2", "shard",
                                                     "pipeshard"};

std::vector<StudyCell> study_cells(const std::vector<std::string>& clusters,
                                   const std::vector<std::string>& models,
                                   const SearchOptions& options) {
  std::vector<StudyCell> cells;
  for (const auto& cluster : clusters) {
    const Slice slice = load_slice(cluster);
    const GpuSubset all = gpu_subsets(slice, false).front();
    for (const auto& name : models) {
      const ModelSpec model = load_model(name);
      const auto candidates = study_techniques(model, slice, all, options.space);
      const SearchResult r = evaluate(model, slice, candidates, every_plan(options));
      for (const auto& technique : kTechniques) {
        StudyCell cell{cluster, name, technique};
        auto same = [&](const Evaluated& e) {
          return technique_name(e.candidate.plan) == technique;
        };
        auto ok = std::find_if(r.ranked.begin(), r.ranked.end(), same);  // fastest first
        // The leanest variant that still does not fit says best what is short.
        auto oom = r.out_of_memory.end();
        for (auto it = r.out_of_memory.begin(); it != r.out_of_memory.end(); ++it)
          if (same(*it) && (oom == r.out_of_memory.end() ||
                            it->peak_memory_bytes - it->memory_capacity_bytes <
                                oom->peak_memory_bytes - oom->memory_capacity_bytes))
            oom = it;
        if (ok != r.ranked.end()) {
          cell.tflops_per_gpu = ok->tflops_per_gpu;
          cell.step_time_s = ok->step_time_s;
          cell.tokens_per_s = ok->tokens_per_s;
          cell.plan = to_short_string(ok->candidate.plan);
        } else if (oom != r.out_of_memory.end()) {
          cell.oom = true;
          cell.plan = to_short_string(oom->candidate.plan);
          cell.note = oom->reason;
        } else {
          cell.unavailable = true;
        }
        cells.push_back(cell);
      }
    }
  }
  return cells;
}

static std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else if (c == '"')
      out += "&quot;";
    else
      out += c;
  }
  return out;
}

ValueAxis round_axis(double max_value, int ticks) {
  if (!(max_value > 0)) return {};
  const double raw = max_value / std::max(1, ticks);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 10 * magnitude;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * magnitude >= raw * (1 - 1e-9)) {
      step = m * magnitude;
      break;
    }
  return {std::ceil(max_value / step - 1e-9) * step, step};
}

namespace {

// 1375 -> "1,375": minutes as the study prints them.
std::string grouped(double value) {
  std::string digits = fmt::format("{:.0f}", value);
  for (int at = int(digits.size()) - 3; at > (digits[0] == '-' ? 1 : 0); at -= 3)
    digits.insert(at, ",");
  return digits;
}

const char* const kColors[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759"};

std::vector<std::string> in_order(const std::vector<StudyCell>& cells,
                                  std::string StudyCell::*field, const std::string& cluster = "") {
  std::vector<std::string> out;
  for (const auto& c : cells)
    if ((cluster.empty() || c.cluster == cluster) &&
        std::find(out.begin(), out.end(), c.*field) == out.end())
      out.push_back(c.*field);
  return out;
}

// One chart: groups of bars (one group per model, one bar per technique) on the given axis, the
// value axis titled with its unit, the category axis with what its groups are.
std::string chart(const std::string& cluster, const std::vector<StudyCell>& cells,
                  const ValueAxis& axis) {
  const std::vector<std::string> models = in_order(cells, &StudyCell::model, cluster);
  const int bar = 46, gap = 40, height = 220, left = 78, top_margin = 34,
            base = top_margin + height;
  const int width = std::max(left + int(models.size()) * (4 * bar + gap) + 20, left + 4 * 120 + 20);
  std::string svg = fmt::format(
      "<svg xmlns='http://www.w3.org/2000/svg' width='{}' height='{}' viewBox='0 0 {} {}' "
      "font-family='Helvetica, Arial, sans-serif' font-size='12'>\n"
      "<text x='{}' y='18' font-size='14' font-weight='bold'>{}: predicted TFLOP/s per GPU by "
      "technique</text>\n",
      width, base + 76, width, base + 76, left, escape(cluster));
  const int steps = int(std::lround(axis.top / axis.step));
  for (int t = 0; t <= steps; ++t) {
    const double v = axis.step * t;
    const double y = base - height * v / axis.top;
    svg += fmt::format(
        "<line x1='{}' x2='{}' y1='{:.1f}' y2='{:.1f}' stroke='{}'/>"
        "<text x='{}' y='{:.1f}' text-anchor='end'>{:g}</text>\n",
        left, width - 10, y, y, t == 0 ? "#000" : "#ddd", left - 6, y + 4, v);
  }
  svg += fmt::format("<line x1='{0}' x2='{0}' y1='{1}' y2='{2}' stroke='#000'/>\n", left,
                     top_margin, base);
  svg += fmt::format(
      "<text transform='translate({},{}) rotate(-90)' text-anchor='middle'>TFLOP/s "
      "per GPU (Alpa's formula)</text>\n",
      18, top_margin + height / 2);
  for (size_t m = 0; m < models.size(); ++m) {
    const int x0 = left + 10 + int(m) * (4 * bar + gap);
    for (size_t t = 0; t < kTechniques.size(); ++t) {
      auto it = std::find_if(cells.begin(), cells.end(), [&](const StudyCell& c) {
        return c.cluster == cluster && c.model == models[m] && c.technique == kTechniques[t];
      });
      if (it == cells.end()) continue;
      const int x = x0 + int(t) * bar;
      if (it->oom || it->unavailable) {
        svg += fmt::format(
            "<text x='{}' y='{}' text-anchor='middle' font-size='20' fill='{}'>"
            "{}<title>{}</title></text>\n",
            x + bar / 2, base - 6, kColors[t], it->oom ? "&#x2717;" : "-",
            escape(it->oom ? "out of memory: " + it->note : "not applicable"));
        continue;
      }
      const double h = std::max(1.0, height * it->tflops_per_gpu / axis.top);
      svg += fmt::format(
          "<rect x='{}' y='{:.1f}' width='{}' height='{:.1f}' fill='{}'><title>{}: {:.3g} "
          "TFLOP/s per GPU ({})</title></rect>"
          "<text x='{}' y='{:.1f}' text-anchor='middle' font-size='10'>{:.3g}</text>\n",
          x + 3, base - h, bar - 6, h, kColors[t], escape(kTechniques[t]), it->tflops_per_gpu,
          escape(it->plan), x + bar / 2, base - h - 3, it->tflops_per_gpu);
    }
    svg += fmt::format("<text x='{}' y='{}' text-anchor='middle'>{}</text>\n", x0 + 2 * bar,
                       base + 18, escape(models[m]));
  }
  svg += fmt::format(
      "<text x='{}' y='{}' text-anchor='middle'>model (every GPU of the cluster; "
      "&#x2717; = out of GPU memory)</text>\n",
      (left + width) / 2, base + 36);
  for (size_t t = 0; t < kTechniques.size(); ++t)
    svg += fmt::format(
        "<rect x='{}' y='{}' width='10' height='10' fill='{}'/>"
        "<text x='{}' y='{}'>{}</text>\n",
        left + int(t) * 120, base + 52, kColors[t], left + int(t) * 120 + 14, base + 61,
        escape(kTechniques[t]));
  return svg + "</svg>\n";
}

ValueAxis common_axis(const std::vector<StudyCell>& cells) {
  double top = 0;
  for (const auto& c : cells) top = std::max(top, c.tflops_per_gpu);
  return round_axis(top > 0 ? top * 1.08 : 1);  // room for the value labels above the bars
}

const StudyCell* cell_of(const std::vector<StudyCell>& cells, const std::string& cluster,
                         const std::string& model, const std::string& technique) {
  for (const auto& c : cells)
    if (c.cluster == cluster && c.model == model && c.technique == technique) return &c;
  return nullptr;
}

// The study's wall-clock figure beside the prediction: per model, data parallel against
// pipeshard on the study's slice (minutes when the tokens to train are known, and the ratio).
std::string measured_beside_predicted(const std::vector<StudyCell>& cells,
                                      const StudyReportContext& c) {
  const StudyMeasurement& m = c.measured;
  std::string html = fmt::format(
      "<h2>The study's measurement beside the prediction</h2>\n<p>Measured by the study on {} "
      "({:g} ms round trip), {:g} epochs: data parallel {} min, pipeshard {} min, "
      "{:.2f}&times; (source: {}).</p>\n<table><tr><th>model</th><th>technique</th><th>measured "
      "min</th><th>predicted step s</th><th>predicted min</th><th>data parallel / pipeshard"
      "</th></tr>\n",
      escape(m.slice), m.rtt_ms, m.epochs, grouped(m.data_parallel_minutes),
      grouped(m.pipeshard_minutes), m.ratio(), escape(m.source));
  bool any = false;
  for (const auto& model : in_order(cells, &StudyCell::model, m.slice)) {
    const StudyCell* dp = cell_of(cells, m.slice, model, "data parallel");
    const StudyCell* pipe = cell_of(cells, m.slice, model, "pipeshard");
    if (!dp || !pipe) continue;
    any = true;
    auto ok = [](const StudyCell* x) { return !x->oom && !x->unavailable && x->step_time_s > 0; };
    const std::string ratio = ok(dp) && ok(pipe)
                                  ? fmt::format("predicted {:.2f}&times;, measured {:.2f}&times;",
                                                dp->step_time_s / pipe->step_time_s, m.ratio())
                                  : "-";
    for (const StudyCell* x : {dp, pipe}) {
      const bool is_dp = x == dp;
      const std::string minutes =
          ok(x) && c.train_tokens ? grouped(*c.train_tokens / x->tokens_per_s / 60) : "-";
      html += fmt::format(
          "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
          escape(model), escape(x->technique),
          grouped(is_dp ? m.data_parallel_minutes : m.pipeshard_minutes),
          ok(x)    ? fmt::format("{:.3f}", x->step_time_s)
          : x->oom ? "&#x2717; out of memory"
                   : "n/a",
          minutes, is_dp ? ratio : "");
    }
  }
  html += "</table>\n";
  if (!any)
    html += fmt::format(
        "<p>The report does not include the study's slice {}: add it to --clusters "
        "to compare.</p>\n",
        escape(m.slice));
  if (!c.train_tokens)
    html +=
        "<p>Predicted minutes need the tokens the study trained (20 epochs of its data set, "
        "which it does not state): give <code>--tokens</code>. The ratio does not depend on "
        "them.</p>\n";
  html += "<p>Not stated by the study:</p><ul>\n";
  for (const auto& u : m.unstated) html += "<li>" + escape(u) + "</li>\n";
  return html + "</ul>\n";
}

std::string how_made(const StudyReportContext& c) {
  std::string html = fmt::format(
      "<h2>How this report was made</h2>\n<table class='about'><tr><th>command</th><td><code>{}"
      "</code></td></tr><tr><th>fabtrain</th><td>{}</td></tr><tr><th>date</th><td>{}</td></tr>"
      "<tr><th>calibration</th><td>{}</td></tr></table>\n<p>Assumptions:</p><ul>\n",
      escape(c.command), escape(c.version), escape(c.date), escape(c.calibration));
  for (const auto& a : c.assumptions) html += "<li>" + escape(a) + "</li>\n";
  return html + "</ul>\n";
}

}  // namespace

std::vector<std::pair<std::string, std::string>> study_svgs(const std::vector<StudyCell>& cells) {
  const ValueAxis axis = common_axis(cells);
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& cluster : in_order(cells, &StudyCell::cluster))
    out.push_back({cluster, chart(cluster, cells, axis)});
  return out;
}

std::string study_html(const std::vector<StudyCell>& cells, const StudyReportContext& context) {
  std::string html =
      "<!doctype html>\n<html><head><meta charset='utf-8'><title>fabtrain: the study's figures, "
      "predicted</title><style>body{font-family:sans-serif;max-width:1000px;margin:2em auto}"
      "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;text-align:"
      "right}td:nth-child(-n+3),th:nth-child(-n+3){text-align:left}table.about td,table.about th"
      "{text-align:left}</style></head><body>\n"
      "<h1>Predicted TFLOP/s per GPU by technique</h1>\n<p>Each technique on every GPU of the "
      "cluster, TFLOP/s per GPU as the study computes it (Alpa's formula); &#x2717; = out of GPU "
      "memory, as the study draws failed runs. Predictions of fabtrain's simulator; every chart "
      "has the same scale.</p>\n";
  for (const auto& [cluster, svg] : study_svgs(cells)) {
    html += "<h2>" + escape(cluster) + "</h2>\n" + svg;
    html +=
        "<table><tr><th>model</th><th>technique</th><th>plan</th><th>step s</th><th>TFLOP/s "
        "per GPU</th></tr>\n";
    for (const auto& c : cells) {
      if (c.cluster != cluster) continue;
      html += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                          escape(c.model), escape(c.technique), escape(c.plan),
                          c.oom || c.unavailable ? "-" : fmt::format("{:.3f}", c.step_time_s),
                          c.oom           ? "&#x2717; " + escape(c.note)
                          : c.unavailable ? "n/a"
                                          : fmt::format("{:.2f}", c.tflops_per_gpu));
    }
    html += "</table>\n";
  }
  html += measured_beside_predicted(cells, context);
  html += how_made(context);
  return html + "</body></html>\n";
}

}  // namespace fabtrain
