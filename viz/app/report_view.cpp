// Report view: the lab's measured vs predicted rows (from the trace's "report" metadata,
// or from the live run once it has finished).
#include <nlohmann/json.hpp>

#include "viz/app/views.h"

namespace dtl::viz {

void ReportView::Draw(const Frame& f) {
  const TraceData& d = f.session.data();
  auto it = d.meta.find("report");
  if (it == d.meta.end()) {
    ImGui::TextWrapped("%s", f.session.live() ? "The report appears when the run finishes (step to the end, or press Play)."
                                              : "This trace carries no report (traces from dtlab run include one).");
    return;
  }
  const nlohmann::json r = nlohmann::json::parse(it->second, nullptr, false);
  if (r.is_discarded() || !r.contains("rows") || !r["rows"].is_array()) {
    ImGui::TextUnformatted("the report in this trace is damaged");
    return;
  }
  const bool ok = r.value("ok", false);
  ImGui::TextColored(ok ? ImVec4(0.5f, 0.9f, 0.5f, 1) : ImVec4(1, 0.45f, 0.4f, 1), "%s", ok ? "all checks passed" : "a check failed");
  if (!ImGui::BeginTable("report", 4, ImGuiTableFlags_RowBg | ImGuiTableFlags_Borders | ImGuiTableFlags_ScrollY)) return;
  ImGui::TableSetupColumn("quantity", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableSetupColumn("measured", ImGuiTableColumnFlags_WidthFixed, 90);
  ImGui::TableSetupColumn("predicted", ImGuiTableColumnFlags_WidthFixed, 90);
  ImGui::TableSetupColumn("unit", ImGuiTableColumnFlags_WidthFixed, 60);
  ImGui::TableHeadersRow();
  for (const auto& row : r["rows"]) {
    if (!row.is_object()) continue;
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(row.value("label", row.value("quantity", std::string("?"))).c_str());  // ("quantity": older traces)
    ImGui::TableNextColumn();
    ImGui::Text("%.4g", row.contains("measured") && row["measured"].is_number() ? row["measured"].get<double>() : 0.0);
    ImGui::TableNextColumn();
    if (row.contains("predicted") && row["predicted"].is_number()) ImGui::Text("%.4g", row["predicted"].get<double>());
    else ImGui::TextUnformatted("-");
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(row.value("unit", std::string()).c_str());
  }
  ImGui::EndTable();
}

}  // namespace dtl::viz
