// Pipeline view: a row per stage with the F/B/W blocks of one schedule's training step,
// each box labelled with its micro-batch ("3b": chunk b of an interleaved schedule) and
// colored by it (F light, a full B dark, an input-gradient-only I violet, W outlined), idle gaps hatched (the bubble),
// a time axis, the measured bubble beside the formula's value, each stage's idle share at its row's right; with chunks,
// a triangle where each block's output goes (down, or back up: the V of zb-v and dualpipev). "compare schedules" stacks
// the simulator's timeline of every schedule in the trace (GPipe, 1F1B, interleaved, ZB-H1) on one time axis with each
// one's bubble. While the cursor is inside the step shown, what comes after it is dimmed, so stepping shows the actions
// appear one by one. The numbers are viz/views/pipeline/pipeline_model.
#include <algorithm>
#include <cstdio>

#include "labs/pipeline/pipeline_lab.h"
#include "viz/app/views.h"
#include "viz/model/axes.h"
#include "viz/model/text_fit.h"
#include "viz/views/pipeline/pipeline_draw.h"
#include "viz/views/pipeline/pipeline_model.h"

namespace dtl::viz {

// A row per pipeline stage: the measured F/B/W blocks of one schedule's step, colored by
// micro-batch, the bubble hatched; or (compare) the simulator's timelines of every
// schedule in the trace, stacked on one time axis (viz/views/pipeline/pipeline_model).
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

namespace {

constexpr float kStageLabelWidth = 64, kIdleWidth = 96, kMinTickPx = 90;
using namespace pipeline_ui;

// Where a timeline goes: stage rows from `top`, time 0 at x0, `scale` px per second.
struct Rows {
  float x0 = 0, width = 0, top = 0, row_h = 18;
  double seconds = 1;  // the axis's reach
  float x(double s) const { return x0 + float(s / seconds) * width; }
};

// What one timeline's rows show: a measured step or a simulated one.
struct RowsContent {
  const std::vector<PipeBlock>& blocks;
  int stages = 0, chunks = 1;
  double makespan = 0;
  const std::vector<double>& idle;  // per stage
  std::string_view schedule;        // its name: the placement of its chunks (block_direction)
};

void block_tooltip(const PipeBlock& k, BlockRole role, int chunks) {
  ImGui::BeginTooltip();
  ImGui::Text("stage %d: %s", k.stage, role_name(role));
  ImGui::Text("micro-batch %d%s", k.micro_batch, chunks > 1 ? (", chunk " + std::to_string(k.chunk)).c_str() : "");
  ImGui::Text("%s, from %s to %s", duration(k.end - k.begin).c_str(), duration(k.begin).c_str(),
              duration(k.end).c_str());
  ImGui::EndTooltip();
}

// One timeline's rows: idle gaps hatched, the blocks, each stage's idle share at the right.
// Blocks that begin after `cursor_s` (>= 0) are dimmed.
void draw_rows(ImDrawList* dl, const Rows& g, const RowsContent& c, double cursor_s, float clip_bottom) {
  const std::vector<PipeBlock>& blocks = c.blocks;
  const std::vector<double>& idle = c.idle;
  const int stages = c.stages, chunks = c.chunks;
  const double makespan = c.makespan;
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  const bool hovered = ImGui::IsWindowHovered();
  const float line = ImGui::GetTextLineHeight();
  const std::vector<BlockRole> roles = block_roles(blocks);  // a split B (I) has its own colour
  std::size_t i = 0;
  for (int s = 0; s < stages; ++s) {
    const float y = g.top + float(s) * g.row_h, y0 = y + (g.row_h > 6 ? 2.0f : 0.0f),
                y1 = y + g.row_h - (g.row_h > 6 ? 2.0f : 1.0f);
    if (y > clip_bottom) break;
    if (s % 2 == 0) dl->AddRectFilled(ImVec2(g.x0, y), ImVec2(g.x(makespan), y + g.row_h), IM_COL32(255, 255, 255, 8));
    if (g.row_h >= line || s % std::max(1, int(line / g.row_h) + 1) == 0) {
      char name[24];
      std::snprintf(name, sizeof name, "stage %d", s);
      dl->AddText(ImVec2(g.x0 - kStageLabelWidth, y + (g.row_h - line) / 2), kText, name);
    }
    double last = 0;
    for (; i < blocks.size() && blocks[i].stage < s; ++i) {}
    for (; i < blocks.size() && blocks[i].stage == s; ++i) {
      const PipeBlock& k = blocks[i];
      if (k.begin > last) hatch(dl, ImVec2(g.x(last), y0), ImVec2(g.x(k.begin), y1), kIdle);
      last = std::max(last, k.end);
      const ImVec2 a(g.x(k.begin), y0), b(std::max(g.x(k.end), g.x(k.begin) + 1), y1);
      const bool later = cursor_s >= 0 && k.begin >= cursor_s;
      const ImU32 hue = kHues[std::size_t(k.micro_batch) % std::size(kHues)],
                  fill = block_fill(k.micro_batch, roles[i]);
      dl->AddRectFilled(a, b, later ? with_alpha(fill, 50) : fill, 2.0f);
      if (k.op == Pass::weight)
        dl->AddRect(a, b, later ? with_alpha(hue, 70) : hue, 2.0f, 0, 2.0f);
      else if (b.x - a.x > 4)
        dl->AddRect(a, b, IM_COL32(10, 10, 14, later ? 60 : 170), 2.0f);
      if (chunks > 1)
        direction_mark(dl, a, b, block_direction(k, c.schedule, stages, chunks),
                       later ? IM_COL32(235, 235, 240, 60) : IM_COL32(235, 235, 240, 220));
      char text[16];
      block_text(k, chunks, text, sizeof text);
      const ImVec2 ts = ImGui::CalcTextSize(text);
      if (ts.x + 4 < b.x - a.x && ts.y <= y1 - y0 + 2) {
        const ImU32 ink = k.op == Pass::weight ? IM_COL32(235, 235, 240, 255)
                          : light(fill)        ? IM_COL32(15, 15, 20, 255)
                                               : IM_COL32(245, 245, 250, 255);
        dl->AddText(ImVec2((a.x + b.x - ts.x) / 2, (y0 + y1 - ts.y) / 2), later ? with_alpha(ink, 70) : ink, text);
      }
      if (hovered && mouse.x >= a.x && mouse.x < b.x && mouse.y >= y && mouse.y < y + g.row_h)
        block_tooltip(k, roles[i], chunks);
    }
    if (makespan > last) hatch(dl, ImVec2(g.x(last), y0), ImVec2(g.x(makespan), y1), kIdle);
    if (std::size_t(s) < idle.size() && (g.row_h >= line || s % std::max(1, int(line / g.row_h) + 1) == 0)) {
      const std::string text = "idle " + percent(idle[std::size_t(s)]);
      dl->AddText(ImVec2(g.x0 + g.width + 10, y + (g.row_h - line) / 2), kDim, text.c_str());
    }
  }
}

// The time axis under the rows: ticks counted from the step's start.
void draw_axis(ImDrawList* dl, const Rows& g, float y_top, float y) {
  const double ns = g.seconds * 1e9;
  for (const Tick& t : time_ticks(0, ns, 0, g.width, kMinTickPx)) {
    const float x = g.x0 + float(t.value / ns) * g.width;
    dl->AddLine(ImVec2(x, y_top), ImVec2(x, y + 4), IM_COL32(255, 255, 255, 22));
    const float tw = ImGui::CalcTextSize(t.label.c_str()).x;
    dl->AddText(ImVec2(std::clamp(x - tw / 2, g.x0 - 8, g.x0 + g.width - tw), y + 5), kDim, t.label.c_str());
  }
  dl->AddLine(ImVec2(g.x0, y), ImVec2(g.x0 + g.width, y), IM_COL32(255, 255, 255, 90));
}

// The formula's text as the default (Latin-1) font draws it. The step's bubble is one step's;
// the report's measured row is the run's (the median of its runs' means): both are shown, each
// named, so one figure never stands for the other (tests/viz/view_figures_test.cpp).
std::string bubble_line(double measured, int step, const BubbleRow* row) {
  std::string text = "step " + std::to_string(step) + ": bubble " + percent(measured) + " measured";
  if (row && row->measured >= 0) text += " (the run's median " + percent(row->measured) + ")";
  if (row && row->predicted >= 0)
    text += " \xc2\xb7 " + percent(row->predicted) + " " +
            (row->provenance == Provenance::simulated ? "simulated" : "formula " + row->source);
  return text;
}

// `split`: the blocks shown split a backward (I and W swatches too).
void legend(int micro_batches, int chunks, bool split) {
  const float h = ImGui::GetTextLineHeight();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  auto swatch = [&](BlockRole role, const char* text) {
    const ImVec2 p = ImGui::GetCursorScreenPos();
    dl->AddRectFilled(p, ImVec2(p.x + h * 1.6f, p.y + h), block_fill(1, role), 2.0f);
    if (role == BlockRole::weight_grad) dl->AddRect(p, ImVec2(p.x + h * 1.6f, p.y + h), kHues[1], 2.0f, 0, 2.0f);
    ImGui::Dummy(ImVec2(h * 1.6f, h));
    ImGui::SameLine();
    ImGui::TextUnformatted(text);
    ImGui::SameLine(0, 14);
  };
  swatch(BlockRole::forward, "F forward (light)");
  swatch(BlockRole::backward, "B full backward (dark)");
  if (split) swatch(BlockRole::input_grad, "I input grad only (violet)");
  if (split) swatch(BlockRole::weight_grad, "W weight grad (outlined)");
  const ImVec2 p = ImGui::GetCursorScreenPos();
  hatch(dl, p, ImVec2(p.x + h * 1.6f, p.y + h), kIdle);
  ImGui::Dummy(ImVec2(h * 1.6f, h));
  ImGui::SameLine();
  ImGui::TextUnformatted("idle (the bubble)");
  ImGui::SameLine(0, 14);
  ImGui::TextDisabled("color: micro-batch");
  for (int m = 0; m < std::min<int>(micro_batches, int(std::size(kHues))); ++m) {
    ImGui::SameLine(0, 4);
    const ImVec2 q = ImGui::GetCursorScreenPos();
    dl->AddRectFilled(q, ImVec2(q.x + h, q.y + h), kHues[std::size_t(m)], 2.0f);
    char t[8];
    std::snprintf(t, sizeof t, "%d", m);
    dl->AddText(ImVec2(q.x + (h - ImGui::CalcTextSize(t).x) / 2, q.y), IM_COL32(15, 15, 20, 255), t);
    ImGui::Dummy(ImVec2(h, h));
  }
  if (micro_batches > int(std::size(kHues))) {
    ImGui::SameLine();
    ImGui::TextDisabled("(colors repeat every %zu)", std::size(kHues));
  }
  if (chunks < 2) return;
  // The direction marks (direction_mark): where each block's output goes.
  const ImVec2 q = ImGui::GetCursorScreenPos();
  const ImU32 mark = IM_COL32(235, 235, 240, 220), box = IM_COL32(90, 90, 100, 255);
  dl->AddRectFilled(q, ImVec2(q.x + h * 1.6f, q.y + h), box, 2.0f);
  direction_mark(dl, q, ImVec2(q.x + h * 1.6f, q.y + h), 1, mark);
  dl->AddRectFilled(ImVec2(q.x + h * 1.8f, q.y), ImVec2(q.x + h * 3.4f, q.y + h), box, 2.0f);
  direction_mark(dl, ImVec2(q.x + h * 1.8f, q.y), ImVec2(q.x + h * 3.4f, q.y + h), -1, mark);
  ImGui::Dummy(ImVec2(h * 3.4f, h));
  ImGui::SameLine();
  ImGui::TextUnformatted(
      "its output goes to a later / an earlier stage (a V: chunk b flows back up; "
      "label 3b: micro-batch 3, chunk b)");
}

}  // namespace

void PipelineView::Refresh(const TraceData& d) {
  const std::array<std::size_t, 3> key = {reinterpret_cast<std::size_t>(&d), d.events.size(), d.meta.size()};
  if (key == key_) return;
  key_ = key;
  runs_ = pipeline_runs(d);
  std::vector<std::string> order;
  for (const PipelineRun& r : runs_.runs) order.push_back(r.schedule);
  sims_ = simulated_pipelines(d, order);
  bubbles_ = report_bubbles(d);
  step_wanted_ = -2;  // the step is cut again
}

// The step asked for, else the one the cursor is in (once stepping has begun), else the
// last complete one; recomputed only when that changes.
const PipelineStep& PipelineView::StepShown(const Frame& f, const PipelineRun& run) {
  int want = step;
  at_cursor_ = false;
  if (want < 0 && f.cursor > 0) want = pipeline_step_at(run, f.cursor_time()), at_cursor_ = want >= 0;
  if (want != step_wanted_ || step_schedule_ != run.schedule) {
    step_ = pipeline_step(f.session.data(), run, want);
    step_wanted_ = want, step_schedule_ = run.schedule;
  }
  return step_;
}

void PipelineView::Draw(const Frame& f) {
  const TraceData& d = f.session.data();
  Refresh(d);
  if (runs_.runs.empty() && sims_.runs.empty()) {
    ImGui::TextWrapped(
        "No pipeline actions in this run yet (the pipeline lab records each stage's F, B and W as compute spans).");
    return;
  }
  // The schedule shown: as asked (--pipeline-schedule or the combo), else the lab's default
  // 1f1b, else the first in the trace.
  const PipelineRun* run = runs_.find(schedule);
  if (!run && !runs_.runs.empty()) {
    run = runs_.find(ScheduleKind::one_f_one_b) ? runs_.find(ScheduleKind::one_f_one_b) : &runs_.runs.front();
    schedule = run->schedule;
  }
  const PipelineStep* s = run ? &StepShown(f, *run) : nullptr;
  DrawHeader(run, s);
  if (compare)
    DrawCompare();
  else if (s && s->step >= 0)
    DrawMeasured(f, *s);
  else
    ImGui::TextDisabled("no measured actions for this schedule yet");
  if (runs_.dropped)
    ImGui::TextDisabled("%zu more schedules not shown (the limit is %zu)", runs_.dropped, kMaxPipelineSchedules);
}

void PipelineView::DrawHeader(const PipelineRun* run, const PipelineStep* s) {
  if (!runs_.runs.empty()) {
    ImGui::SetNextItemWidth(130);
    if (ImGui::BeginCombo("schedule", clip_text(schedule, 60).c_str())) {
      for (const PipelineRun& r : runs_.runs)
        if (ImGui::Selectable((clip_text(r.schedule, 60) + "##" + std::to_string(&r - runs_.runs.data())).c_str(),
                              r.schedule == schedule))
          schedule = r.schedule, step = -1;
      ImGui::EndCombo();
    }
    ImGui::SameLine();
    char shown[48];
    const bool at_cursor = s && run && at_cursor_;
    if (step < 0)
      std::snprintf(shown, sizeof shown, "%s (%d)", at_cursor ? "at the cursor" : "last complete", s ? s->step : -1);
    else
      std::snprintf(shown, sizeof shown, "%d", step);
    ImGui::SetNextItemWidth(150);
    if (run && ImGui::BeginCombo("step", shown)) {
      if (ImGui::Selectable("at the cursor, else the last complete", step < 0)) step = -1;
      for (const PipeStepRange& r : run->steps) {
        const std::string name = std::to_string(r.step) + (r.complete ? "" : " (incomplete)");
        if (ImGui::Selectable(name.c_str(), r.step == step)) step = r.step;
      }
      ImGui::EndCombo();
    }
    ImGui::SameLine(0, 20);
  }
  ImGui::Checkbox("compare schedules (simulated)", &compare);
  if (compare && sims_.runs.empty())
    ImGui::TextDisabled("this trace holds no simulated timelines (pipeline_simulated.*)");
  for (std::size_t i = 0; i < shown_count(sims_.notes.size()); ++i)
    ImGui::TextDisabled("left out: %s", clip_text(sims_.notes[i]).c_str());
  if (sims_.notes.size() > kMaxDrawnItems) ImGui::TextDisabled("%s", more_line(sims_.notes.size()).c_str());
}

void PipelineView::DrawMeasured(const Frame& f, const PipelineStep& s) {
  const auto row = bubbles_.find(s.schedule);
  const BubbleRow* b = row == bubbles_.end() ? nullptr : &row->second;
  ImGui::TextColored(ImVec4(1, 0.86f, 0.24f, 1), "%s", clip_text(bubble_line(s.bubble, s.step, b)).c_str());
  ImGui::SameLine(0, 24);
  ImGui::TextDisabled("%s, step %d%s: P = %d stages, M = %d micro-batches%s, first action to last %s",
                      clip_text(s.schedule, 200).c_str(), s.step, s.complete ? "" : " (incomplete)", s.stages,
                      s.micro_batches, s.chunks > 1 ? (", v = " + std::to_string(s.chunks) + " chunks").c_str() : "",
                      duration(s.makespan()).c_str());
  legend(s.micro_batches, s.chunks, has_weight_blocks(s.blocks));
  ImGui::NewLine();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 start = ImGui::GetCursorScreenPos(), avail = ImGui::GetContentRegionAvail();
  const float line = ImGui::GetTextLineHeight(), axis_h = line + 10;
  Rows g;
  g.x0 = start.x + kStageLabelWidth;
  g.width = std::max(40.0f, avail.x - kStageLabelWidth - kIdleWidth);
  g.top = start.y + 2;
  g.row_h = std::clamp((avail.y - axis_h - 24) / float(std::max(1, s.stages)), 2.0f, 72.0f);
  g.seconds = std::max(s.makespan(), 1e-9);
  // The cursor inside this step: what comes after it is dimmed.
  const std::int64_t now = f.cursor_time();
  const bool inside = f.cursor > 0 && now >= s.begin_ns && now < s.end_ns;
  const double cursor_s = inside ? double(now - s.begin_ns) * 1e-9 : -1;
  const float bottom = g.top + float(s.stages) * g.row_h;
  draw_rows(dl, g, {s.blocks, s.stages, s.chunks, s.makespan(), s.stage_idle, s.schedule}, cursor_s, start.y + avail.y);
  draw_axis(dl, g, g.top, std::min(bottom, start.y + avail.y - axis_h) + 2);
  if (inside) {
    const float x = g.x(cursor_s);
    dl->AddLine(ImVec2(x, g.top - 2), ImVec2(x, bottom + 2), kCursor, 2.0f);
  }
  ImGui::SetCursorScreenPos(ImVec2(start.x, std::min(bottom, start.y + avail.y - axis_h) + axis_h + 4));
  ImGui::TextDisabled(
      "time from the step's start; a stage's idle = 1 - busy / span; bubble = 1 - sum of busy / (P x span), span: "
      "first action to last");
}

// Small multiples: the simulator's timeline of every schedule, one shared time axis.
void PipelineView::DrawCompare() {
  if (sims_.runs.empty()) return;
  int micro = 0, chunks = 1;
  double longest = 0;
  int rows = 0;
  for (const SimulatedPipeline& r : sims_.runs)
    micro = std::max(micro, r.micro_batches), longest = std::max(longest, r.makespan), rows += r.stages,
    chunks = std::max(chunks, r.chunks);
  bool split = false;
  for (const SimulatedPipeline& r : sims_.runs) split = split || has_weight_blocks(r.blocks);
  legend(micro, chunks, split);
  ImGui::NewLine();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 start = ImGui::GetCursorScreenPos(), avail = ImGui::GetContentRegionAvail();
  const float line = ImGui::GetTextLineHeight(), title_h = line + 8, axis_h = line + 10, gap = 8;
  const float n = float(sims_.runs.size());
  Rows g;
  g.x0 = start.x + kStageLabelWidth;
  g.width = std::max(40.0f, avail.x - kStageLabelWidth - kIdleWidth);
  g.seconds = longest;
  g.row_h = std::clamp((avail.y - n * (title_h + gap) - axis_h - 24) / float(std::max(1, rows)), 2.0f, 30.0f);
  float y = start.y;
  for (const SimulatedPipeline& r : sims_.runs) {
    const auto row = bubbles_.find(r.schedule);
    std::string title = r.schedule + "   bubble " + percent(r.bubble) + " simulated";
    if (row != bubbles_.end() && row->second.measured >= 0)
      title += " \xc2\xb7 " + percent(row->second.measured) + " measured";
    if (row != bubbles_.end() && row->second.predicted >= 0 && row->second.provenance != Provenance::simulated)
      title += " \xc2\xb7 " + percent(row->second.predicted) + " formula " + row->second.source;
    title += "   first action to last " + duration(r.makespan) +
             (r.chunks > 1 ? ", v = " + std::to_string(r.chunks) + " chunks" : "");
    dl->AddText(ImVec2(start.x, y + 3), kYellow, clip_text(title).c_str());
    g.top = y + title_h;
    draw_rows(dl, g, {r.blocks, r.stages, r.chunks, r.makespan, r.stage_idle, r.schedule}, -1, start.y + avail.y);
    y = g.top + float(r.stages) * g.row_h + gap;
  }
  draw_axis(dl, g, start.y + title_h, std::min(y, start.y + avail.y - axis_h));
  ImGui::SetCursorScreenPos(ImVec2(start.x, std::min(y, start.y + avail.y - axis_h) + axis_h + 4));
  ImGui::TextDisabled("the lab's simulator with this run's mean F, B and W times; one time axis for all");
}

namespace {
std::unique_ptr<Panel> make_pipeline(const PanelSettings& s) {
  auto p = std::make_unique<PipelineView>();
  p->schedule = s.option("pipeline-schedule");
  p->compare = s.option("pipeline-compare") == "on";
  return p;
}
const bool registered =
    register_panel({kPipelineView,
                    "Pipeline: stages, micro-batches and the bubble",
                    make_pipeline,
                    {{"pipeline-schedule", ViewOption::Kind::text,
                      "The pipeline view's measured run: a schedule in the trace (gpipe, 1f1b, interleaved, zb-h1; "
                      "default 1f1b, else the first)"},
                     {"pipeline-compare", ViewOption::Kind::flag,
                      "Start the pipeline view comparing schedules: the simulator's timeline of each schedule in the "
                      "trace, stacked"}}});
}  // namespace
}  // namespace dtl::viz
