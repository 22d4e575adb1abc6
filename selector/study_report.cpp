// The study's figures as predictions: table rows and an HTML page (see study_report.hpp).
#include "selector/study_report.hpp"

#include <fmt/format.h>

#include <algorithm>
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
        auto same = [&](const Evaluated& e) { return technique_name(e.candidate.plan) == technique; };
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
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

// One chart per cluster: groups of bars (one group per model, one bar per technique).
static std::string chart(const std::string& cluster, const std::vector<StudyCell>& cells) {
  static const char* colors[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759"};
  std::vector<std::string> models;
  double top = 0;
  for (const auto& c : cells) {
    if (c.cluster != cluster) continue;
    if (std::find(models.begin(), models.end(), c.model) == models.end()) models.push_back(c.model);
    top = std::max(top, c.tflops_per_gpu);
  }
  if (top <= 0) top = 1;
  const int bar = 46, gap = 40, height = 220, left = 50, base = height + 20;
  const int width = left + int(models.size()) * (4 * bar + gap) + 20;
  std::string svg = fmt::format(
      "<svg xmlns='http://www.w3.org/2000/svg' width='{}' height='{}' font-family='sans-serif' "
      "font-size='12'>\n",
      width, base + 50);
  for (int t = 0; t <= 4; ++t) {
    const double v = top * t / 4;
    const int y = base - int(height * t / 4.0);
    svg += fmt::format("<line x1='{}' x2='{}' y1='{}' y2='{}' stroke='#ddd'/>"
                       "<text x='{}' y='{}' text-anchor='end'>{:.1f}</text>\n",
                       left, width - 10, y, y, left - 6, y + 4, v);
  }
  for (size_t m = 0; m < models.size(); ++m) {
    const int x0 = left + 10 + int(m) * (4 * bar + gap);
    for (size_t t = 0; t < kTechniques.size(); ++t) {
      auto it = std::find_if(cells.begin(), cells.end(), [&](const StudyCell& c) {
        return c.cluster == cluster && c.model == models[m] && c.technique == kTechniques[t];
      });
      if (it == cells.end()) continue;
      const int x = x0 + int(t) * bar;
      if (it->oom || it->unavailable) {
        svg += fmt::format("<text x='{}' y='{}' text-anchor='middle' font-size='20' fill='{}'>"
                           "{}</text><title>{}</title>\n",
                           x + bar / 2, base - 6, colors[t], it->oom ? "&#x2717;" : "-",
                           escape(it->oom ? "out of memory: " + it->note : "not applicable"));
        continue;
      }
      const int h = std::max(1, int(height * it->tflops_per_gpu / top));
      svg += fmt::format("<rect x='{}' y='{}' width='{}' height='{}' fill='{}'><title>{}: {:.2f} "
                         "TFLOP/s per GPU ({})</title></rect>"
                         "<text x='{}' y='{}' text-anchor='middle' font-size='10'>{:.2f}</text>\n",
                         x + 3, base - h, bar - 6, h, colors[t], escape(kTechniques[t]),
                         it->tflops_per_gpu, escape(it->plan), x + bar / 2, base - h - 3,
                         it->tflops_per_gpu);
    }
    svg += fmt::format("<text x='{}' y='{}' text-anchor='middle'>{}</text>\n", x0 + 2 * bar,
                       base + 18, escape(models[m]));
  }
  for (size_t t = 0; t < kTechniques.size(); ++t)
    svg += fmt::format("<rect x='{}' y='{}' width='10' height='10' fill='{}'/>"
                       "<text x='{}' y='{}'>{}</text>\n",
                       left + int(t) * 120, base + 30, colors[t], left + int(t) * 120 + 14,
                       base + 39, escape(kTechniques[t]));
  return svg + "</svg>\n";
}

std::string study_html(const std::vector<StudyCell>& cells) {
  std::vector<std::string> clusters;
  for (const auto& c : cells)
    if (std::find(clusters.begin(), clusters.end(), c.cluster) == clusters.end())
      clusters.push_back(c.cluster);
  std::string html =
      "<!doctype html>\n<html><head><meta charset='utf-8'><title>fabtrain: the study's figures, "
      "predicted</title><style>body{font-family:sans-serif;max-width:1000px;margin:2em auto}"
      "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;text-align:"
      "right}td:nth-child(-n+3),th:nth-child(-n+3){text-align:left}</style></head><body>\n"
      "<h1>Predicted TFLOP/s per GPU by technique</h1>\n<p>Each technique on every GPU of the "
      "cluster, TFLOP/s per GPU as the study computes it (Alpa's formula); &#x2717; = out of GPU "
      "memory, as the study draws failed runs. Predictions of fabtrain's simulator.</p>\n";
  for (const auto& cluster : clusters) {
    html += "<h2>" + escape(cluster) + "</h2>\n" + chart(cluster, cells);
    html += "<table><tr><th>model</th><th>technique</th><th>plan</th><th>step s</th><th>TFLOP/s "
            "per GPU</th></tr>\n";
    for (const auto& c : cells) {
      if (c.cluster != cluster) continue;
      html += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                          escape(c.model), escape(c.technique), escape(c.plan),
                          c.oom || c.unavailable ? "-" : fmt::format("{:.3f}", c.step_time_s),
                          c.oom ? "&#x2717; " + escape(c.note)
                                : c.unavailable ? "n/a" : fmt::format("{:.2f}", c.tflops_per_gpu));
    }
    html += "</table>\n";
  }
  return html + "</body></html>\n";
}

}  // namespace fabtrain
