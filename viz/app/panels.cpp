// The registry of view kinds → panels. A lab lists its views (LabInfo::views); the app
// makes the panel of each from here and lays them out with arrange_panels (viz/model).
// The viewer's own three are below; a lab's own view registers from its folder
// (viz/views/<lab>/*.cpp, which viz/CMakeLists.txt compiles into dtlab-viz).
#include <algorithm>

#include "core/error.h"
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

struct Registry {
  std::vector<PanelKind> panels = {
      {ViewKind::timeline, "Timeline", make_timeline},
      {ViewKind::memory, "Memory per rank", make<MemoryView>},
      {ViewKind::report, "Report: measured vs predicted", make<ReportView>},
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

}  // namespace dtl::viz
