// Real traces for the visualizer's tests: a lab run on thread ranks and written the way
// `dtlab run LAB --trace FILE` writes it (JSON + .dtlt companion, the same metadata).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "core/comm/threads_backend.h"
#include "core/trace/chrome_writer.h"
#include "labs/lab.h"
#include "viz/model/axes.h"
#include "viz/model/memory_model.h"
#include "viz/model/report_plots.h"
#include "viz/model/trace_index.h"
#include "viz/views/pipeline/pipeline_model.h"

namespace dtl::test {

// A fresh folder under the test temp dir, removed with its files when this goes away.
struct TempFolder {
  std::filesystem::path path;
  explicit TempFolder(const std::string& name) {
    path = std::filesystem::path(testing::TempDir()) / (name + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempFolder() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

// Runs the collectives lab and writes its trace to `path` (and `path`.dtlt).
inline void write_lab_trace(const std::string& path, int ranks, const std::string& algo, std::uint64_t bytes) {
  const LabInfo& lab = *find_lab("collectives");
  LabConfig cfg;
  cfg.ranks = ranks;
  cfg.bytes = bytes;
  cfg.iters = 0;  // one traced run, as the live visualizer does
  cfg.warmup = 0;
  cfg.options = {{"algo", algo}};
  cfg = with_defaults(lab, cfg);
  Trace trace(ranks);
  trace.set_meta("lab", lab.name);
  for (const auto& [k, v] : cfg.options.text()) trace.set_meta(k, v);
  trace.set_meta("bytes", std::to_string(cfg.bytes));
  trace.set_meta("chunks", std::to_string(lab.chunk_grid(cfg)));
  ThreadsOptions opt;
  opt.world_size = ranks;
  opt.trace = &trace;
  Report report;
  const RunResult r = run_threads(opt, [&](Comm& c) {
    Report mine = lab.run(c, cfg);
    if (c.rank() == 0) report = std::move(mine);
  });
  if (!r.ok()) throw Error("the fixture run failed: " + r.error);
  trace.set_meta("report", report.to_json().dump());
  write_chrome_trace(trace, path);
}

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << bytes;
}

// What the app does with a trace file (Session::replay: load_trace + index_trace), then
// the model queries a frame makes, so hostile data reaches every derived structure.
inline std::string load_like_the_app(const std::string& path) {
  const viz::TraceData d = viz::load_trace(path);
  const viz::TraceIndex x = viz::index_trace(d);
  const std::size_t n = x.transfers.size();
  for (std::size_t k : {std::size_t(0), n / 2, n}) {
    if (x.chunk_timeline.available()) (void)x.chunk_timeline.state_after(x.transfers, k);
    (void)x.chunk_timeline.bytes_sent_after(x.transfers, k);
  }
  const viz::TimeAxis axis{double(d.t_begin), double(d.t_end) + 1, 0, 1000};
  std::size_t boxes = 0;
  for (std::size_t i = 0; i < x.tracks.size() && i < 256; ++i)
    boxes += viz::visible_boxes(d, x.tracks[i], axis, 3).size();
  double idle = 0;
  for (int r = 0; r < d.ranks && r < 256; ++r) idle += x.busy.idle_fraction(r, d.t_begin, d.t_end + 1);
  // What the DDP views add: steps by collective, the window without the reference phase,
  // the memory picture with its formula, and both axes.
  const std::size_t collectives = viz::collectives_in_order(d.events).size();
  const viz::TimeRange shown = viz::shown_range(d, x, false);
  const std::size_t ticks =
      viz::time_ticks(double(shown.begin), double(shown.end) + 1, double(shown.begin), 1000, 80).size();
  const viz::MemoryPicture mem = viz::memory_at(d, d.t_end);
  const std::size_t mem_ticks = viz::byte_scale(mem.largest(), 5).ticks.size();
  // A run of phases with formulas (ZeRO's --stage all), and the report's plots.
  const viz::PhaseMemories phases = viz::memory_by_phase(d);
  std::size_t plot_ticks = 0;
  if (auto it = d.meta.find("report"); it != d.meta.end())
    for (const viz::Plot& p : viz::parse_report_plots(nlohmann::json::parse(it->second, nullptr, false)).plots)
      plot_ticks += viz::plot_axis(p.x.front(), p.x.back(), p.x_unit, 5).ticks.size();
  (void)viz::byte_scale(phases.largest(), 5);
  // The pipeline view: each schedule's last complete step, the report's bubbles, the
  // simulated timelines (a hostile trace's pipeline_simulated.* meta).
  const viz::PipelineRuns runs = viz::pipeline_runs(d);
  std::vector<std::string> order;
  for (const viz::PipelineRun& r : runs.runs) (void)viz::pipeline_step(d, r).bubble, order.push_back(r.schedule);
  (void)viz::report_bubbles(d);
  (void)viz::simulated_pipelines(d, order);
  return "loaded " + std::to_string(d.events.size()) + " events, " + std::to_string(d.ranks) + " ranks, " +
         std::to_string(n) + " transfers, " + std::to_string(collectives) + " collectives, " + std::to_string(boxes) +
         " boxes, " + std::to_string(ticks + mem_ticks + plot_ticks) + " ticks";
}

}  // namespace dtl::test
