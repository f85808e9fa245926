// The views of dtlab-viz. Each is a small struct with Draw(); what they hold are view
// settings (zoom, toggles), never lab state: everything drawn comes from the Session.
// Which views a lab shows is its LabInfo::views; viz/app/panels.cpp maps each kind to its
// panel. The timeline, memory and report views are here; a lab's own view is declared and
// registered in its folder (viz/views/<lab>/*.cpp), so a new view edits no file here.
#pragma once

#include <imgui.h>

#include <array>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "viz/app/session.h"
#include "viz/model/grid_model.h"
#include "viz/model/lane_groups.h"
#include "viz/model/memory_model.h"
#include "viz/model/selection.h"
#include "viz/model/what_if.h"

namespace dtl::viz {

// What every view needs this frame.
struct Frame {
  const Session& session;
  std::size_t cursor = 0;            // steps applied so far (transfers, or collectives: Session::unit)
  float anim = 1;                    // 0..1: how far the step `cursor - 1` has travelled
  std::int64_t cursor_time() const;  // when step cursor-1 landed (cursor 0: when the first began)
};

// Colors shared by the views and their legends.
ImU32 kind_color(EventKind k);
ImU32 tag_color(int mem_tag);
ImU32 rank_color(int rank);  // a rank's own color: the timeline's lane swatch, the split view's bands
ImU32 contribution_color(int count, int ranks);  // light (own data) → dark (all ranks' data)
void legend_swatch(ImU32 color, const char* text);
std::string human_bytes(double bytes);  // "1.5 KiB"

// A panel: one view, drawn into the space it is given.
struct Panel {
  virtual ~Panel() = default;
  virtual void Draw(const Frame& f) = 0;
  virtual void Restart() {}  // the run starts over (the timeline fits the new one)
};

struct LaneFlows;  // the send → receive arrows of a frame (timeline_lanes.cpp)

struct TimelineView final : Panel {
  TimeAxis axis;         // the visible window (zoom and pan are view settings)
  bool fitted = false;   // fit the run on the first frame...
  bool follow = true;    // ...and keep fitting a growing live run until the user zooms or pans
  float start_zoom = 1;  // then zoom this much closer around the cursor (--zoom)
  bool show_flows = true;
  bool show_reference = false;          // the 1-rank reference phase (hidden: it would fill the timeline)
  std::vector<ImU32> label_colors;      // per label id: compute spans colored by what they are
  std::vector<bool> checkpoint_labels;  // per label id: a checkpoint's span (colored as its mark)
  bool training_labels = false;         // some are forward, backward or optimizer
  bool recompute_labels = false;        // some are a recomputed forward
  LaneGrouping grouping;                // lanes by (pp, dp, tp), folded groups (on by default with meta "grid")
  bool grouping_set = false;            // grouping's defaults were taken from the trace
  std::size_t first_row = 0;            // rows scrolled past (wheel over the lane names)
  // A replay opens on one training step of its first timed phase (first_timed_step), set-up,
  // reference and checks out of view; a button shows the whole run and back.
  bool one_step = false;
  float min_label_width = 0;          // the names column at least this wide (--compare: both timelines on one scale)
  std::optional<double> time_origin;  // ns: where the axis counts from (none: the run's start)
  // Range selection (drag; timeline_select.cpp): the range selected, ns, and one to select on
  // the first frame (--select FROM,TO: ms from the axis's 0).
  std::optional<TimeRange> selection;
  std::optional<std::pair<double, double>> select_at_start_ms;
  void Draw(const Frame& f) override;
  float LabelWidth() const;  // the names column: wider when grouped ("stage 0 · replica 1")
  void Restart() override {
    fitted = false, follow = true, label_colors.clear(), grouping_set = false, rows_key_ = {}, first_row = 0,
    one_step = false, selection.reset(), totals_key_ = {};
  }

 private:
  void Fit(const Frame& f, float x0, float width);
  void DrawHeader(const Frame& f);
  const char* OriginText(const Frame& f) const;
  double AxisOrigin(const Frame& f) const;  // ns: the time the axis labels 0
  // timeline_select.cpp: drag to select, right-drag to pan; the range drawn; its totals
  void StartSelection(const Frame& f);
  void HandleMouse(bool hovered);
  void DrawSelectedRange(ImVec2 top, float height) const;
  void DrawSelectionTotals(const Frame& f, float height);
  std::optional<double> drag_from_;           // ns: where the drag began
  SelectionTotals totals_;                    // of `selection`, made when the key changes
  std::array<std::int64_t, 4> totals_key_{};  // (range, trace address, events)
  void DrawAxis(const Frame& f, ImVec2 top, float height);
  float DrawPhaseStrip(const Frame& f,
                       ImVec2 top);  // rank 0's phases, labelled (the lab's variants, stages, schedules)
  void ShowRange(double t0, double t1);
  void DrawLanes(const Frame& f, ImVec2 top, ImVec2 size, bool hovered);
  void DrawCheckpointMarks(const Frame& f, ImVec2 top, float height) const;
  void ColorLabels(const TraceData& d);
  ImU32 span_color(const Event& e) const;
  // timeline_lanes.cpp: the rows (tracks, group headers, folded groups) and how they draw
  void GroupLanes(const Frame& f);  // rows_ when the tracks, the grid or the folding change
  void DrawGroupRow(const Frame& f, const LaneRow& row, float x0, float y, float w, bool hovered);
  void DrawTrack(const Frame& f, std::size_t track, float x0, float y, bool hovered, LaneFlows& flows);
  float RowHeight(const LaneRow& row) const;
  GridModel grid_;
  std::size_t grid_key_ = 0;  // the meta "grid" it was made from (its size + 1; 0: none)
  std::vector<LaneRow> rows_;
  std::array<std::size_t, 5> rows_key_{};  // (trace address, tracks, by_axis, fold default, toggles' hash)
  float names_w_ = 0;  // the widest rank name and lane ("rank 1024 (pp 1, dp 0, tp 0) main: layers")
};

struct MemoryView final : Panel {
  bool by_phase = true;  // a run with phase formulas (ZeRO's stages): one picture per phase
  void Draw(const Frame& f) override;
  void Restart() override { phases_key_ = {}; }

 private:
  void DrawAtCursor(const Frame& f);
  void DrawPhases(int ranks);                       // phases_, as small multiples
  const PhaseMemories& Phases(const TraceData& d);  // recomputed when the trace grows
  PhaseMemories phases_;
  std::array<std::size_t, 4> phases_key_{};  // the trace (address, events, samples, meta) it was made from
};

struct ReportView final : Panel {
  void Draw(const Frame& f) override;
};

// What-if (viz/app/what_if_view.cpp): sliders over the run's settings and the formulas'
// predictions at them (viz/model/what_if.h) beside the run's measured figures. It holds the
// slider values; the model and rows are derived from the session's trace, cached by key.
struct WhatIfView final : Panel {
  std::vector<WhatIfSetting> start_at;  // --what-if-set: the sliders' values on the first frame
  void Draw(const Frame& f) override;
  void Restart() override { key_ = {}, values_.reset(); }

 private:
  std::pair<const TraceData*, std::size_t> key_{};  // the trace (and its meta's size) the model was read from
  WhatIfModel model_;
  std::optional<WhatIfValues> values_, rows_at_;  // the sliders; the values rows_ were computed at
  std::vector<WhatIfRow> rows_;
  std::vector<std::string> unused_;  // --what-if-set knobs this lab has no slider for
  void StartAt();
};

ImU32 axis_color(GroupAxis a);  // dp, tp, pp: the topology's outlines and the timeline's transfers

// A start-up option a view declares with its registration (dtlab-viz --pipeline-compare): the
// viewer adds it to its command line, so a view's options live in the view's own file.
struct ViewOption {
  enum class Kind { flag, text, rank };  // rank: a whole number from 0 to the largest rank a trace holds
  const char* name;                      // without the dashes: "pipeline-schedule"
  Kind kind;
  const char* help;
};

// The registry of view kinds → panels (viz/app/panels.cpp).
struct PanelSettings {
  float zoom = 1;                            // --zoom: the timeline's start zoom
  std::map<std::string, std::string> given;  // each view option given: name → value ("on" for a flag)
  // A view option's value as given, or `otherwise` when it was not.
  std::string option(const std::string& name, const std::string& otherwise = "") const;
};
struct PanelKind {
  ViewKind kind;
  const char* title;  // the panel's heading
  std::unique_ptr<Panel> (*make)(const PanelSettings&);
  std::vector<ViewOption> options = {};  // its start-up options, if it has any
};
// The viewer's own panels (timeline, memory, report) and every one a lab's folder registered.
const std::vector<PanelKind>& panel_registry();
// A lab's view adds its panel from a static initializer in its file (viz/views/<lab>/*.cpp,
// compiled into dtlab-viz): `const bool registered = register_panel({kRingView, "Ring", make});`.
// Returns true; Error when the registry was already read or the kind is registered twice.
bool register_panel(const PanelKind& panel);
const PanelKind* find_panel(ViewKind kind);                  // nullptr: no panel draws this kind in this build
std::string view_names(const std::vector<ViewKind>& views);  // "timeline, memory, report"

}  // namespace dtl::viz
