// The views of dtlab-viz. Each is a small struct with Draw(); what they hold are view
// settings (zoom, toggles), never lab state: everything drawn comes from the Session.
// Which views a lab shows is its LabInfo::views; viz/app/panels.cpp maps each kind to
// its panel, so a new view is its file, an enum value and one registry line.
#pragma once

#include <imgui.h>

#include <array>
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "viz/app/session.h"
#include "viz/model/grid_model.h"
#include "viz/model/lane_groups.h"
#include "viz/model/memory_model.h"
#include "viz/model/pipeline_model.h"
#include "viz/model/split_model.h"

namespace dtl::viz {

// What every view needs this frame.
struct Frame {
  const Session& session;
  std::size_t cursor = 0;  // steps applied so far (transfers, or collectives: Session::unit)
  float anim = 1;          // 0..1: how far the step `cursor - 1` has travelled
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

struct RingView final : Panel {
  void Draw(const Frame& f) override;
};

struct LaneFlows;  // the send → receive arrows of a frame (timeline_lanes.cpp)

struct TimelineView final : Panel {
  TimeAxis axis;          // the visible window (zoom and pan are view settings)
  bool fitted = false;    // fit the run on the first frame...
  bool follow = true;     // ...and keep fitting a growing live run until the user zooms or pans
  float start_zoom = 1;   // then zoom this much closer around the cursor (--zoom)
  bool show_flows = true;
  bool show_reference = false;  // the 1-rank reference phase (hidden: it would fill the timeline)
  std::vector<ImU32> label_colors;  // per label id: compute spans colored by what they are
  bool training_labels = false;     // some are forward, backward or optimizer
  LaneGrouping grouping;            // lanes by (pp, dp, tp), folded groups (on by default with meta "grid")
  bool grouping_set = false;        // grouping's defaults were taken from the trace
  std::size_t first_row = 0;        // rows scrolled past (wheel over the lane names)
  void Draw(const Frame& f) override;
  void Restart() override { fitted = false, follow = true, label_colors.clear(), grouping_set = false, rows_key_ = {}, first_row = 0; }

 private:
  void Fit(const Frame& f, float x0, float width);
  void DrawHeader(const Frame& f);
  void DrawAxis(const Frame& f, ImVec2 top, float height);
  void DrawBreaks(ImVec2 top, float height, bool hovered);
  void DrawLanes(const Frame& f, ImVec2 top, ImVec2 size, bool hovered);
  void ColorLabels(const TraceData& d);
  ImU32 span_color(const Event& e) const;
  // timeline_lanes.cpp: the rows (tracks, group headers, folded groups) and how they draw
  void GroupLanes(const Frame& f);  // rows_ when the tracks, the grid or the folding change
  void DrawGroupRow(const Frame& f, const LaneRow& row, float x0, float y, float w, bool hovered);
  void DrawTrack(const Frame& f, std::size_t track, float x0, float y, bool hovered, LaneFlows& flows);
  float RowHeight(const LaneRow& row) const;
  float LabelWidth() const;  // wider when grouped: "stage 0 · replica 1"
  GridModel grid_;
  std::size_t grid_key_ = 0;  // the meta "grid" it was made from (its size + 1; 0: none)
  std::vector<LaneRow> rows_;
  std::array<std::size_t, 5> rows_key_{};  // (trace address, tracks, by_axis, fold default, toggles' hash)
};

struct MemoryView final : Panel {
  bool by_phase = true;  // a run with phase formulas (ZeRO's stages): one picture per phase
  void Draw(const Frame& f) override;
  void Restart() override { phases_key_ = {}; }

 private:
  void DrawAtCursor(const Frame& f);
  void DrawPhases(int ranks);  // phases_, as small multiples
  const PhaseMemories& Phases(const TraceData& d);  // recomputed when the trace grows
  PhaseMemories phases_;
  std::array<std::size_t, 4> phases_key_{};  // the trace (address, events, samples, meta) it was made from
};

struct ReportView final : Panel {
  void Draw(const Frame& f) override;
};

// A row per pipeline stage: the measured F/B/W blocks of one schedule's step, colored by
// micro-batch, the bubble hatched; or (compare) the simulator's timelines of every
// schedule in the trace, stacked on one time axis (viz/model/pipeline_model).
struct PipelineView final : Panel {
  std::string schedule;  // the measured run shown; "" until the first frame picks one
  int step = -1;         // -1: the step at the cursor, else the last complete one
  bool compare = false;  // the simulated timelines of every schedule instead
  void Draw(const Frame& f) override;
  void Restart() override { key_ = {}; }

 private:
  void Refresh(const TraceData& d);  // runs_, sims_, bubbles_: when the trace grows
  const PipelineStep& StepShown(const Frame& f, const PipelineRun& run);
  void DrawHeader(const PipelineRun* run, const PipelineStep* s);
  void DrawMeasured(const Frame& f, const PipelineStep& s);
  void DrawCompare();
  PipelineRuns runs_;
  SimulatedPipelines sims_;
  std::map<std::string, BubbleRow> bubbles_;
  std::array<std::size_t, 3> key_{};  // the trace (address, events, meta) they were made from
  PipelineStep step_;                 // the step shown, kept while (schedule, step) stay
  std::string step_schedule_;
  int step_wanted_ = -2;
  bool at_cursor_ = false;  // the step shown is the one the cursor is in
};

// Tensor parallel: the weight matrices of one block cut into the slices each rank holds,
// f and g on the activation line, the collective at the cursor named and lit up
// (viz/model/split_model).
struct SplitView final : Panel {
  void Draw(const Frame& f) override;
  void Restart() override { model_key_ = {}, moment_key_ = {}; }

 private:
  void Refresh(const Frame& f);  // model_ when the meta changes, moment_ when the cursor moves
  void DrawMatrices();
  SplitModel model_;
  TpMoment moment_;
  std::array<std::size_t, 2> model_key_{};   // the trace (address, tp_split's size) it was made from
  std::array<std::size_t, 3> moment_key_{};  // (address, events, cursor)
};

// The grid of ranks (viz/model/grid_model): pipeline stages as columns, dp replicas stacked
// in each, a replica's tp ranks side by side, labelled with their world rank. Hovering a
// rank (or --highlight-rank) outlines its dp, tp and pp groups in the axis colors.
struct TopologyView final : Panel {
  int pinned = -1;  // a rank highlighted without the pointer (--highlight-rank), -1: none
  void Draw(const Frame& f) override;
  void Restart() override { key_ = {}; }

 private:
  GridModel model_;
  std::array<std::size_t, 3> key_{};  // the trace (address, grid meta's size, gpus_per_node's size)
};

ImU32 axis_color(GroupAxis a);  // dp, tp, pp: the topology's outlines and the timeline's transfers

// The registry of view kinds → panels (viz/app/panels.cpp).
struct PanelSettings {
  float zoom = 1;                 // --zoom: the timeline's start zoom
  std::string pipeline_schedule;  // --pipeline-schedule: the pipeline view's measured run ("": 1f1b or the first)
  bool pipeline_compare = false;  // --pipeline-compare: the pipeline view starts comparing schedules
  int highlight_rank = -1;        // --highlight-rank: the topology view lights this rank's groups
};
struct PanelKind {
  ViewKind kind;
  const char* title;  // the panel's heading
  std::unique_ptr<Panel> (*make)(const PanelSettings&);
};
const std::vector<PanelKind>& panel_registry();
const PanelKind* find_panel(ViewKind kind);  // nullptr: no panel draws this kind yet
std::string view_names(const std::vector<ViewKind>& views);  // "timeline, memory, report"

}  // namespace dtl::viz
