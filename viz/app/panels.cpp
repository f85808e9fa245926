// The registry of view kinds → panels. A lab lists its views (LabInfo::views); the app
// makes the panel of each from here and lays them out with arrange_panels (viz/model).
// Adding a view: its ViewKind (labs/view_kind.h), its struct in views.h and file, one line here.
#include <algorithm>

#include "viz/app/views.h"

namespace dtl::viz {

namespace {
template <class View>
std::unique_ptr<Panel> make(const PanelSettings&) {
  return std::make_unique<View>();
}

std::unique_ptr<Panel> make_timeline(const PanelSettings& s) {
  auto t = std::make_unique<TimelineView>();
  t->start_zoom = s.zoom;
  return t;
}

std::unique_ptr<Panel> make_topology(const PanelSettings& s) {
  auto t = std::make_unique<TopologyView>();
  t->pinned = s.highlight_rank;
  return t;
}

std::unique_ptr<Panel> make_pipeline(const PanelSettings& s) {
  auto p = std::make_unique<PipelineView>();
  p->schedule = s.pipeline_schedule;
  p->compare = s.pipeline_compare;
  return p;
}
}  // namespace

const std::vector<PanelKind>& panel_registry() {
  static const std::vector<PanelKind> panels = {
      {ViewKind::ring, "Ring: chunks and their contributions", make<RingView>},
      {ViewKind::timeline, "Timeline", make_timeline},
      {ViewKind::memory, "Memory per rank", make<MemoryView>},
      {ViewKind::report, "Report: measured vs predicted", make<ReportView>},
      {ViewKind::pipeline, "Pipeline: stages, micro-batches and the bubble", make_pipeline},
      {ViewKind::split, "Tensor parallel: who holds which slice", make<SplitView>},
      {ViewKind::topology, "Topology: the dp \xc3\x97 tp \xc3\x97 pp grid of ranks and their groups", make_topology},
  };
  return panels;
}

const PanelKind* find_panel(ViewKind kind) {
  const auto& all = panel_registry();
  auto it = std::find_if(all.begin(), all.end(), [&](const PanelKind& p) { return p.kind == kind; });
  return it == all.end() ? nullptr : &*it;
}

std::string view_names(const std::vector<ViewKind>& views) {
  std::string out;
  for (ViewKind v : views) out += (out.empty() ? "" : ", ") + std::string(view_kind_name(v));
  return out;
}

}  // namespace dtl::viz
