// What-if view: a slider per setting the lab's formulas take (ranks, micro-batches, chunks v,
// ZeRO stage), and a row per figure those formulas predict at the sliders' values, beside
// the same formula at the run's own settings and what the run measured (viz/model/what_if.h
// computes them all; this file only draws). Each row's bar shows the prediction on a scale
// shared with the run's figures; the white tick marks the measured point.
#include <algorithm>

#include "viz/app/views.h"
#include "viz/model/report_plots.h"

namespace dtl::viz {

namespace {

const ImU32 kPredictedColor = IM_COL32(90, 200, 210, 255), kRunColor = IM_COL32(170, 170, 180, 255),
            kMeasuredColor = IM_COL32(255, 255, 255, 255);

std::string value_text(double v, const std::string& unit) {
  return unit.empty() ? format_value(100 * v, "%") : format_value(v, unit);  // "" is a share: shown in %
}

// The prediction as a bar, the run's formula value and its measured value as ticks, on one scale.
void draw_bar(const WhatIfRow& r) {
  const ImVec2 o = ImGui::GetCursorScreenPos();
  const float w = std::max(60.0f, ImGui::GetContentRegionAvail().x - 4), h = ImGui::GetTextLineHeight();
  double top = std::max(r.predicted, r.at_run);
  if (r.measured) top = std::max(top, *r.measured);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->AddRect(o, ImVec2(o.x + w, o.y + h), IM_COL32(255, 255, 255, 40));
  if (top > 0) {
    const auto X = [&](double v) { return o.x + w * float(std::clamp(v / top, 0.0, 1.0)); };
    dl->AddRectFilled(ImVec2(o.x, o.y + 3), ImVec2(X(r.predicted), o.y + h - 3), kPredictedColor);
    dl->AddLine(ImVec2(X(r.at_run), o.y), ImVec2(X(r.at_run), o.y + h), kRunColor, 2);
    if (r.measured)
      dl->AddLine(ImVec2(X(*r.measured), o.y - 2), ImVec2(X(*r.measured), o.y + h + 2), kMeasuredColor, 2);
  }
  ImGui::Dummy(ImVec2(w, h));
}

void draw_rows(const std::vector<WhatIfRow>& rows) {
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV |
                                ImGuiTableFlags_SizingStretchProp | ImGuiTableFlags_ScrollY;
  if (!ImGui::BeginTable("what_if_rows", 6, flags)) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("figure", ImGuiTableColumnFlags_WidthStretch, 3.0f);
  ImGui::TableSetupColumn("predicted here", ImGuiTableColumnFlags_WidthStretch, 1.2f);
  ImGui::TableSetupColumn("at the run's size", ImGuiTableColumnFlags_WidthStretch, 1.2f);
  ImGui::TableSetupColumn("measured (the run)", ImGuiTableColumnFlags_WidthStretch, 1.2f);
  ImGui::TableSetupColumn("formula", ImGuiTableColumnFlags_WidthStretch, 1.4f);
  ImGui::TableSetupColumn("bar: predicted | run's formula, measured", ImGuiTableColumnFlags_WidthStretch, 2.2f);
  ImGui::TableHeadersRow();
  for (const WhatIfRow& r : rows) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextWrapped("%s", r.label.c_str());
    ImGui::TableNextColumn();
    if (r.note.empty())
      ImGui::TextColored(ImVec4(0.35f, 0.8f, 0.85f, 1), "%s", value_text(r.predicted, r.unit).c_str());
    else
      ImGui::TextDisabled("refused");
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(value_text(r.at_run, r.unit).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(r.measured ? value_text(*r.measured, r.unit).c_str() : "-");
    ImGui::TableNextColumn();
    ImGui::TextWrapped("%s", r.source.c_str());
    ImGui::TableNextColumn();
    if (r.note.empty())
      draw_bar(r);
    else  // the lab's own refusal, e.g. 1F1B with fewer micro-batches than stages
      ImGui::TextWrapped("%s", r.note.c_str());
  }
  ImGui::EndTable();
}

}  // namespace

// --what-if-set's values, each clamped to its slider's range; a knob this lab has no slider
// for is said on the panel.
void WhatIfView::StartAt() {
  unused_.clear();
  for (const WhatIfSetting& set : start_at) {
    const auto slider = std::find_if(model_.sliders.begin(), model_.sliders.end(),
                                     [&](const WhatIfSlider& s) { return s.knob == set.knob; });
    if (slider == model_.sliders.end())
      unused_.push_back(what_if_knob_name(set.knob));
    else
      values_->at(set.knob) = std::clamp(set.value, slider->lo, slider->hi);
  }
}

void WhatIfView::Draw(const Frame& f) {
  const TraceData& d = f.session.data();
  if (key_ != std::pair{&d, d.meta.size()}) {  // a new trace, or a live run's meta grew (its report arrived)
    key_ = {&d, d.meta.size()}, model_ = what_if_model(d), rows_at_.reset();
    if (!values_ || model_.lab == WhatIfLab::none) values_ = model_.run, StartAt();
  }
  if (model_.lab == WhatIfLab::none) {
    ImGui::TextWrapped("No what-if here: %s.", model_.why_none.c_str());
    return;
  }
  ImGui::TextDisabled(
      "Formulas (core/theory, as the report's) at the sliders' values, and at the run's size (ranks, M, v, s); "
      "measured: this run's.");
  for (const WhatIfSlider& s : model_.sliders) {
    ImGui::SetNextItemWidth(std::min(320.0f, ImGui::GetContentRegionAvail().x * 0.45f));
    const int value = values_->at(s.knob);
    ImGui::SliderInt(what_if_knob_name(s.knob), &values_->at(s.knob), s.lo, s.hi,
                     s.knob == WhatIfKnob::recompute ? what_if_recompute_name(value) : "%d",
                     ImGuiSliderFlags_AlwaysClamp);
    ImGui::SameLine();
    std::string run = s.knob == WhatIfKnob::recompute ? what_if_recompute_name(model_.run.recompute)
                                                      : std::to_string(model_.run.at(s.knob));
    if (s.knob == WhatIfKnob::zero_stage && model_.zero_stages.size() > 1)  // --stage all: each stage's rows
      run = std::to_string(model_.zero_stages.front()) + " to " + std::to_string(model_.zero_stages.back());
    ImGui::TextDisabled("(run: %s)", run.c_str());
  }
  for (const std::string& line : unused_)
    ImGui::TextColored(ImVec4(1, 0.45f, 0.4f, 1), "--what-if-set %s: this lab's formulas have no such slider",
                       line.c_str());
  if (ImGui::Button("the run's settings")) values_ = model_.run;
  if (rows_at_ != values_) rows_ = what_if_rows(d, model_, *values_), rows_at_ = values_;
  ImGui::SameLine();
  legend_swatch(kPredictedColor, "predicted here");  // (each swatch stays on the line)
  legend_swatch(kRunColor, "run's formula");
  legend_swatch(kMeasuredColor, "measured");
  ImGui::NewLine();
  draw_rows(rows_);
}

}  // namespace dtl::viz
