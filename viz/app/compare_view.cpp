#include "viz/app/compare_view.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "viz/model/report_plots.h"
#include "viz/model/text_fit.h"

namespace dtl::viz {

namespace {

// The report in a trace's metadata, or null (no report, or a damaged one).
nlohmann::json report_of(const Session& s) {
  const std::string* text = s.data().meta_of(MetaKey::report);
  if (!text) return nullptr;
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  return j.is_discarded() ? nlohmann::json(nullptr) : j;
}

std::string value_text(const std::optional<double>& v, const std::string& unit) {
  return v ? format_value(*v, unit) : "-";
}

std::string difference_text(const CompareRow& row) {
  const std::optional<double> d = row.difference();
  if (!d) return "-";
  std::string text = *d > 0 ? "+" : *d < 0 ? "-" : "";  // (appended: GCC 12 misreads "+" + string as a wild memcpy)
  text += format_value(std::abs(*d), row.unit);
  return text;
}

// A row by its id, or for rows paired across cases, its metric and both cases:
// "step_time (naive | bucketed)".
std::string row_name(const CompareRow& row) {
  if (row.id_a.empty() || row.id_b.empty() || row.id_a == row.id_b) return row.id_a.empty() ? row.id_b : row.id_a;
  const std::size_t da = row.id_a.find('.'), db = row.id_b.find('.');
  if (da == std::string::npos || db == std::string::npos) return row.id_a + " | " + row.id_b;
  return row.id_a.substr(da + 1) + " (" + row.id_a.substr(0, da) + " | " + row.id_b.substr(0, db) + ")";
}

}  // namespace

CompareWindow::CompareWindow(std::unique_ptr<Session> a, std::string name_a, std::unique_ptr<Session> b,
                             std::string name_b) {
  a_.session = std::move(a), a_.name = clip_text(name_a);
  b_.session = std::move(b), b_.name = clip_text(name_b);
  const TraceIndex &xa = a_.session->index(), &xb = b_.session->index();
  const CompareAlignment al = align_runs(xa.first_step, shown_range(a_.session->data(), xa, false), xb.first_step,
                                         shown_range(b_.session->data(), xb, false));
  a_.anchor = al.anchor_a, b_.anchor = al.anchor_b;
  const double pad = 0.02 * al.span;  // as the timeline's own fit
  rel0_ = -pad, rel1_ = al.span + pad;
  for (CompareRun* r : {&a_, &b_})
    r->view.fitted = true, r->view.follow = false, r->view.one_step = true, r->view.time_origin = r->anchor;
}

// One run's timeline in a child of `height`, on the shared window; a zoom or pan (or the
// view's own "whole run" button) there moves the shared window, so the other follows.
void CompareWindow::DrawTimeline(CompareRun& run, const char* id, float height) {
  const double t0 = run.anchor + rel0_, t1 = run.anchor + rel1_;
  run.view.axis.t0 = t0, run.view.axis.t1 = t1;
  ImGui::BeginChild(id, ImVec2(0, height), true);
  ImGui::Text("%s: %s  (%s)", id, run.name.c_str(), clip_text(run.session->lab_name()).c_str());
  run.view.Draw(viz::Frame{*run.session, run.session->steps().size(), 1});
  ImGui::EndChild();
  if (run.view.axis.t0 != t0 || run.view.axis.t1 != t1)
    rel0_ = run.view.axis.t0 - run.anchor, rel1_ = run.view.axis.t1 - run.anchor;
}

// The rows of both reports, paired: A's figure, B's, B - A and B / A.
void CompareWindow::DrawRows(float height) {
  const nlohmann::json ra = report_of(*a_.session), rb = report_of(*b_.session);
  if (ra.is_null() && rb.is_null()) {
    ImGui::TextDisabled("neither trace carries a report (traces from dtlab run include one)");
    return;
  }
  const std::vector<CompareRow> rows = compare_rows(ra, rb);
  const std::string head_a = "A (" + value_title(ra) + ")", head_b = "B (" + value_title(rb) + ")";
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_Borders | ImGuiTableFlags_ScrollY;
  if (!ImGui::BeginTable("compare rows", 6, flags, ImVec2(0, height))) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("row (case A | case B)", ImGuiTableColumnFlags_WidthStretch, 1);
  ImGui::TableSetupColumn("quantity", ImGuiTableColumnFlags_WidthStretch, 2);
  ImGui::TableSetupColumn(head_a.c_str(), ImGuiTableColumnFlags_WidthFixed, 125);
  ImGui::TableSetupColumn(head_b.c_str(), ImGuiTableColumnFlags_WidthFixed, 125);
  ImGui::TableSetupColumn("B - A", ImGuiTableColumnFlags_WidthFixed, 115);
  ImGui::TableSetupColumn("B / A", ImGuiTableColumnFlags_WidthFixed, 70);
  ImGui::TableHeadersRow();
  for (const CompareRow& row : rows) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(clip_text(row_name(row)).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(clip_text(row.label).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(value_text(row.a, row.unit).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(value_text(row.b, row.unit).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(difference_text(row).c_str());
    ImGui::TableNextColumn();
    if (const std::optional<double> r = row.ratio()) ImGui::Text("%.3g", *r);
  }
  ImGui::EndTable();
}

void CompareWindow::Frame() {
  ImGui::SetNextWindowPos(ImVec2(0, 0));
  ImGui::SetNextWindowSize(ImGui::GetIO().DisplaySize);
  ImGui::Begin("dtlab compare", nullptr,
               ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoSavedSettings |
                   ImGuiWindowFlags_NoBringToFrontOnFocus);
  ImGui::TextUnformatted(
      "Two runs on one time scale, each from the start of its timed step (wheel or right-drag in either moves both)");
  // The same pixels per nanosecond: both timelines' names column as wide as the wider one.
  const float names = std::max(a_.view.LabelWidth(), b_.view.LabelWidth());
  a_.view.min_label_width = b_.view.min_label_width = names;
  const float avail = ImGui::GetContentRegionAvail().y, gap = ImGui::GetStyle().ItemSpacing.y;
  const float lanes = std::max(120.0f, 0.36f * avail);
  DrawTimeline(a_, "A", lanes);
  DrawTimeline(b_, "B", lanes);
  DrawRows(std::max(60.0f, avail - 2 * (lanes + gap)));
  ImGui::End();
}

}  // namespace dtl::viz
