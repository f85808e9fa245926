// The registry of view kinds → panels. A lab lists its views (LabInfo::views); the app
// makes the panel of each from here and lays them out with arrange_panels (viz/model).
// The viewer's own three are below; a lab's own view registers from its folder
// (viz/views/<lab>/*.cpp, which viz/CMakeLists.txt compiles into dtlab-viz).
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "core/error.h"
#include "viz/app/views.h"

namespace dtl::viz {

namespace {
template <class View>
std::unique_ptr<Panel> make(const PanelSettings&) {
  return std::make_unique<View>();
}

// --select FROM,TO: two numbers of milliseconds from the timeline's 0, FROM < TO.
std::pair<double, double> parse_select(const std::string& text) {
  const std::size_t comma = text.find(',');
  char* end = nullptr;
  const double a = comma == std::string::npos ? 0 : std::strtod(text.c_str(), &end);
  const bool a_ok = comma != std::string::npos && end == text.c_str() + comma;
  const double b = a_ok ? std::strtod(text.c_str() + comma + 1, &end) : 0;
  if (!a_ok || *end != '\0' || end == text.c_str() + comma + 1 || !std::isfinite(a) || !std::isfinite(b) || a >= b)
    throw UsageError(
        "--select takes FROM,TO in milliseconds from the timeline's 0, FROM below TO (e.g. --select "
        "0.2,0.9); got '" +
        text + "'");
  return {a, b};
}

std::unique_ptr<Panel> make_timeline(const PanelSettings& s) {
  auto t = std::make_unique<TimelineView>();
  t->start_zoom = s.zoom;
  if (const std::string select = s.option("select"); !select.empty()) t->select_at_start_ms = parse_select(select);
  return t;
}

std::unique_ptr<Panel> make_what_if(const PanelSettings& s) {
  auto w = std::make_unique<WhatIfView>();
  if (const std::string set = s.option("what-if-set"); !set.empty()) w->start_at = parse_what_if_set(set);
  return w;
}

struct Registry {
  std::vector<PanelKind> panels = {
      {ViewKind::timeline,
       "Timeline",
       make_timeline,
       {{"select", ViewOption::Kind::text,
         "Select this range of the timeline at start, FROM,TO in ms from its 0: its spans' totals by name and kind "
         "show below the lanes (as a drag does)"}}},
      {ViewKind::memory, "Memory per rank", make<MemoryView>},
      {ViewKind::report, "Report: measured vs predicted", make<ReportView>},
      {ViewKind::what_if,
       "What if: the formulas at other settings",
       make_what_if,
       {{"what-if-set", ViewOption::Kind::text,
         "Start the what-if view's sliders at these values, KNOB=N[,KNOB=N] (ranks, micro-batches, chunks, "
         "zero-stage, seq, recompute), e.g. micro-batches=32,ranks=8"}}},
  };
  bool read = false;  // panel_registry() was called: too late to add
};
Registry& registry() {
  static Registry r;
  return r;
}
}  // namespace

bool register_panel(const PanelKind& panel) {
  Registry& r = registry();
  if (r.read)
    throw Error("register_panel(" + std::string(panel.kind.name) +
                ") after the panel registry was first read: register from a static initializer");
  if (std::any_of(r.panels.begin(), r.panels.end(), [&](const PanelKind& p) { return p.kind == panel.kind; }))
    throw Error("register_panel: the view '" + std::string(panel.kind.name) + "' is registered twice");
  r.panels.push_back(panel);
  return true;
}

const std::vector<PanelKind>& panel_registry() {
  Registry& r = registry();
  r.read = true;
  return r.panels;
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

std::string PanelSettings::option(const std::string& name, const std::string& otherwise) const {
  const auto it = given.find(name);
  return it == given.end() ? otherwise : it->second;
}

}  // namespace dtl::viz
