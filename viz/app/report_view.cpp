// Report view: the lab's measured vs predicted rows (from the trace's "report" metadata,
// or from the live run once it has finished), and below them its plots (a sweep's curve:
// points joined in order, each labelled, on axes in readable units; viz/model/report_plots).
#include <algorithm>
#include <nlohmann/json.hpp>

#include "viz/app/views.h"
#include "viz/model/report_plots.h"

namespace dtl::viz {

namespace {

std::string expected_text(double expected, double tolerance, const std::string& unit) {
  if (tolerance <= 0) return format_value(expected, unit);
  if (expected == 0) return "<= " + format_value(tolerance, unit);  // (the font has no ≤)
  return format_value(expected, unit) + " \u00b1" + format_value(tolerance, unit);
}

constexpr float kPlotMinWidth = 340, kPlotMinHeight = 170, kPlotMaxHeight = 360, kYAxisWidth = 72;

// One plot in [o, o + size]: title, y label, the area with its grid, the curve, labels.
void draw_plot(ImDrawList* dl, const Plot& p, ImVec2 o, ImVec2 size) {
  const float line = ImGui::GetTextLineHeight();
  const ImU32 text = IM_COL32(220, 220, 225, 255), dim = IM_COL32(170, 170, 180, 255),
              curve = IM_COL32(90, 200, 210, 255);
  dl->PushClipRect(o, ImVec2(o.x + size.x, o.y + size.y), true);
  dl->AddText(o, text, (p.title.empty() ? p.id : p.title).c_str());
  dl->AddText(ImVec2(o.x, o.y + line + 2), dim, p.y_label.c_str());  // (the ticks carry the units)
  const ImVec2 a(o.x + kYAxisWidth, o.y + 2 * line + 12);            // the plot area: [a.x, a.x + w] x [a.y, a.y + h]
  const float w = std::max(40.0f, size.x - kYAxisWidth - 12), h = std::max(30.0f, size.y - (a.y - o.y) - 2 * line - 8);
  const auto [xmin, xmax] = std::minmax_element(p.x.begin(), p.x.end());
  const auto [ymin, ymax] = std::minmax_element(p.y.begin(), p.y.end());
  const PlotAxis xa = plot_axis(*xmin, *xmax, p.x_unit, std::max(2, int(w / 90)));
  const PlotAxis ya = plot_axis(*ymin, *ymax, p.y_unit, std::max(2, int(h / (2.2f * line))));
  auto X = [&](double v) { return a.x + w * float((v - xa.lo) / (xa.hi - xa.lo)); };
  auto Y = [&](double v) { return a.y + h - h * float((v - ya.lo) / (ya.hi - ya.lo)); };
  for (const Tick& t : ya.ticks) {
    const float y = Y(t.value);
    dl->AddLine(ImVec2(a.x - 4, y), ImVec2(a.x + w, y), IM_COL32(255, 255, 255, 25));
    const ImVec2 ts = ImGui::CalcTextSize(t.label.c_str());
    dl->AddText(ImVec2(a.x - 8 - ts.x, y - ts.y / 2), dim, t.label.c_str());
  }
  for (const Tick& t : xa.ticks) {
    const float x = X(t.value);
    dl->AddLine(ImVec2(x, a.y), ImVec2(x, a.y + h + 4), IM_COL32(255, 255, 255, 25));
    const float tw = ImGui::CalcTextSize(t.label.c_str()).x;
    dl->AddText(ImVec2(std::clamp(x - tw / 2, o.x, a.x + w - tw), a.y + h + 5), dim, t.label.c_str());
  }
  dl->AddRect(a, ImVec2(a.x + w, a.y + h), IM_COL32(255, 255, 255, 90));
  dl->AddText(ImVec2(a.x + w / 2 - ImGui::CalcTextSize(p.x_label.c_str()).x / 2, a.y + h + line + 7), dim,
              p.x_label.c_str());
  for (std::size_t i = 1; i < p.x.size(); ++i)
    dl->AddLine(ImVec2(X(p.x[i - 1]), Y(p.y[i - 1])), ImVec2(X(p.x[i]), Y(p.y[i])), curve, 2.0f);
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  for (std::size_t i = 0; i < p.x.size(); ++i) {
    const ImVec2 c(X(p.x[i]), Y(p.y[i]));
    dl->AddCircleFilled(c, 4.0f, curve);
    if (i < p.point_labels.size() && !p.point_labels[i].empty()) {  // beside the point, toward the area's middle
      const ImVec2 ts = ImGui::CalcTextSize(p.point_labels[i].c_str());
      const float lx = c.x + 7 + ts.x > a.x + w ? c.x - 7 - ts.x : c.x + 7;
      const float ly = c.y - ts.y - 2 < a.y ? c.y + 3 : c.y - ts.y - 2;
      dl->AddText(ImVec2(lx, ly), text, p.point_labels[i].c_str());
    }
    if (ImGui::IsWindowHovered() && std::abs(mouse.x - c.x) < 6 && std::abs(mouse.y - c.y) < 6) {
      ImGui::BeginTooltip();
      if (i < p.point_labels.size()) ImGui::TextUnformatted(p.point_labels[i].c_str());
      ImGui::Text("%s: %s", p.x_label.c_str(), format_value(p.x[i], p.x_unit).c_str());
      ImGui::Text("%s: %s", p.y_label.c_str(), format_value(p.y[i], p.y_unit).c_str());
      ImGui::EndTooltip();
    }
  }
  dl->PopClipRect();
}

// The plots side by side, as many as kPlotMinWidth allows per row, as tall as the band
// allows (within kPlotMinHeight..kPlotMaxHeight) and at most twice as wide as tall.
void draw_plots(const ReportPlots& plots) {
  if (!ImGui::BeginChild("plots", ImVec2(0, 0), false)) {
    ImGui::EndChild();
    return;
  }
  for (const std::string& note : plots.skipped) ImGui::TextDisabled("plot left out: %s", note.c_str());
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float gap = 16;
  const int n = int(plots.plots.size()),
            cols = std::clamp(int((avail.x + gap) / (kPlotMinWidth + gap)), 1, std::max(1, n));
  const int rows = (n + cols - 1) / std::max(1, cols);
  const float cell_h =
      std::clamp((avail.y - gap * float(rows - 1)) / float(std::max(1, rows)), kPlotMinHeight, kPlotMaxHeight);
  const float cell_w = std::min((avail.x - gap * float(cols - 1)) / float(cols), 2 * cell_h);
  const ImVec2 start = ImGui::GetCursorScreenPos();
  for (int i = 0; i < n; ++i) {
    const ImVec2 o(start.x + float(i % cols) * (cell_w + gap), start.y + float(i / cols) * (cell_h + gap));
    draw_plot(ImGui::GetWindowDrawList(), plots.plots[std::size_t(i)], o, ImVec2(cell_w, cell_h));
  }
  if (n > 0) ImGui::Dummy(ImVec2(avail.x, float(rows) * (cell_h + gap)));
  ImGui::EndChild();
}

// A field of the trace's report, or `fallback` when it is missing or of another type: a
// hand-edited report ("ok": "yes") used to stop the view with nlohmann's type_error 302.
bool bool_field(const nlohmann::json& j, const char* key, bool fallback) {
  const auto it = j.find(key);
  return it != j.end() && it->is_boolean() ? it->get<bool>() : fallback;
}
std::string text_field(const nlohmann::json& j, const char* key, const std::string& fallback) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}

}  // namespace

namespace {

// The terminal's columns (labs/report_text.cpp): case, quantity, measured, predicted or a
// check's bound, where the prediction comes from, and the check's verdict ("pass" / "FAIL",
// empty for a row that checks nothing: the font has no ✓).
void draw_rows(const nlohmann::json& r, float height) {
  // "measured", or what the figures are when nothing ran: a plan's "estimate", a
  // simulation's "simulated" (Report::value_title).
  const std::string value_title = text_field(r, "value_title", "measured");
  // Narrower than its columns need, the table scrolls sideways instead of wrapping a
  // quantity one letter per line.
  constexpr float kQuantityW = 240, kFromW = 150, kNeeded = 80 + kQuantityW + 135 + 150 + kFromW + 44 + 40;
  const bool narrow = ImGui::GetContentRegionAvail().x < kNeeded;
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_Borders | ImGuiTableFlags_ScrollY |
                                ImGuiTableFlags_Resizable | (narrow ? ImGuiTableFlags_ScrollX : 0);
  if (!ImGui::BeginTable("report", 6, flags, ImVec2(0, height), narrow ? kNeeded : 0)) return;
  // The case (a row id's part before '.': "zero3", "prefetch2") tells apart rows with the
  // same label; values in readable units ("43.2 MiB", "18.9 ms").
  ImGui::TableSetupColumn("case", ImGuiTableColumnFlags_WidthFixed, 80);
  ImGui::TableSetupColumn("quantity", narrow ? ImGuiTableColumnFlags_WidthFixed : ImGuiTableColumnFlags_WidthStretch,
                          narrow ? kQuantityW : 2);
  ImGui::TableSetupColumn(value_title.c_str(), ImGuiTableColumnFlags_WidthFixed, 135);
  ImGui::TableSetupColumn("predicted", ImGuiTableColumnFlags_WidthFixed, 150);
  ImGui::TableSetupColumn("from", narrow ? ImGuiTableColumnFlags_WidthFixed : ImGuiTableColumnFlags_WidthStretch,
                          narrow ? kFromW : 1);
  ImGui::TableSetupColumn("check", ImGuiTableColumnFlags_WidthFixed, 44);
  ImGui::TableHeadersRow();
  for (const auto& row : r["rows"]) {
    if (!row.is_object()) continue;
    const std::string id = text_field(row, "id", ""), unit = text_field(row, "unit", "");
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(id.find('.') == std::string::npos ? "" : id.substr(0, id.find('.')).c_str());
    ImGui::TableNextColumn();
    ImGui::TextWrapped(
        "%s", text_field(row, "label", text_field(row, "quantity", "?")).c_str());  // ("quantity": older traces)
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(
        format_value(row.contains("measured") && row["measured"].is_number() ? row["measured"].get<double>() : 0.0,
                     unit)
            .c_str());
    ImGui::TableNextColumn();
    // A check shows its bound as the terminal does ("<= 1e-5", "4 ±2%"); a prediction its value.
    const double tolerance =
        row.contains("tolerance") && row["tolerance"].is_number() ? row["tolerance"].get<double>() : 0.0;
    if (row.contains("predicted") && row["predicted"].is_number())
      ImGui::TextUnformatted(expected_text(row["predicted"].get<double>(), tolerance, unit).c_str());
    else
      ImGui::TextUnformatted("-");
    ImGui::TableNextColumn();
    ImGui::TextWrapped("%s", text_field(row, "source", "").c_str());
    ImGui::TableNextColumn();
    const auto passed = row.find("passed");
    if (passed != row.end() && passed->is_boolean())
      ImGui::TextColored(passed->get<bool>() ? ImVec4(0.5f, 0.9f, 0.5f, 1) : ImVec4(1, 0.45f, 0.4f, 1), "%s",
                         passed->get<bool>() ? "pass" : "FAIL");
  }
  ImGui::EndTable();
}

// The verdict line: a report with no check says so instead of "all checks passed" (a plan
// or a simulation checks nothing; its figures are the model's).
void draw_verdict(const nlohmann::json& r) {
  int checks = 0;
  for (const auto& row : r["rows"]) checks += row.is_object() && row.contains("passed") ? 1 : 0;
  if (checks == 0) {
    ImGui::TextDisabled("nothing checked: every figure here is a model's");
    return;
  }
  const bool ok = bool_field(r, "ok", false);
  ImGui::TextColored(ok ? ImVec4(0.5f, 0.9f, 0.5f, 1) : ImVec4(1, 0.45f, 0.4f, 1), "%s (%d checks)",
                     ok ? "all checks passed" : "a check failed", checks);
}

}  // namespace

void ReportView::Draw(const Frame& f) {
  const TraceData& d = f.session.data();
  const std::string* report = d.meta_of(MetaKey::report);
  if (!report) {
    ImGui::TextWrapped("%s", f.session.live()
                                 ? "The report appears when the run finishes (step to the end, or press Play)."
                                 : "This trace carries no report (traces from dtlab run include one).");
    // A running lab's curves so far (the GPT's loss): drawn as the run goes.
    if (const std::string* live = d.meta_of(MetaKey::live_plots)) {
      const nlohmann::json j = nlohmann::json::parse(*live, nullptr, false);
      if (!j.is_discarded()) {
        ImGui::TextDisabled("so far, as the run goes:");
        draw_plots(parse_report_plots(j));
      }
    }
    return;
  }
  const nlohmann::json r = nlohmann::json::parse(*report, nullptr, false);
  if (r.is_discarded() || !r.contains("rows") || !r["rows"].is_array()) {
    ImGui::TextUnformatted("the report in this trace is damaged");
    return;
  }
  draw_verdict(r);
  const ReportPlots plots = parse_report_plots(r);
  const bool any_plots = !plots.plots.empty() || !plots.skipped.empty();
  std::vector<std::string> notes;
  if (r.contains("notes") && r["notes"].is_array())
    for (const auto& n : r["notes"])
      if (n.is_string()) notes.push_back(n.get<std::string>());
  const float avail = ImGui::GetContentRegionAvail().y, line = ImGui::GetFrameHeightWithSpacing();
  // The rows keep at least a few lines; the plots get one row of plots (or what is left);
  // the notes, as the terminal prints them under the table, what remains below the rows.
  const float plots_h =
      any_plots
          ? std::min(std::clamp(0.4f * avail, kPlotMinHeight, kPlotMaxHeight) + 16 + line * float(plots.skipped.size()),
                     std::max(0.0f, avail - 6 * line))
          : 0;
  const float notes_h = notes.empty() ? 0 : std::min(line * (1.5f + 1.6f * float(notes.size())), 0.3f * avail);
  const float rows_h =
      any_plots || !notes.empty()
          ? std::max(4 * line, std::min(avail - plots_h - notes_h, line * (float(r["rows"].size()) + 1.5f)))
          : 0;
  draw_rows(r, rows_h);
  if (!notes.empty() && ImGui::BeginChild("notes", ImVec2(0, notes_h), false)) {
    for (const std::string& n : notes) ImGui::TextWrapped("%s", n.c_str());
  }
  if (!notes.empty()) ImGui::EndChild();
  if (any_plots) draw_plots(plots);
}

}  // namespace dtl::viz
