// The controls bar (play, step, speed, scrub) and, for a live run, the options of the next
// run: the ranks and the lab's own options as it declares them (LabInfo::options), so the
// panel is the same for every lab. Restart (home) applies them.
#include <algorithm>
#include <cstdio>

#include "core/error.h"
#include "core/util/units.h"
#include "exercises/track/track.h"
#include "viz/app/app.h"
#include "viz/model/text_fit.h"

namespace dtl::viz {

void RunChoices::Load(const LabInfo& lab, const LabConfig& cfg) {
  ranks = cfg.ranks;
  has_bytes = lab.uses(RunOption::bytes);
  std::snprintf(bytes, sizeof bytes, "%s", format_size(cfg.bytes).c_str());
  fields.clear();
  for (const OptionSpec& spec : lab.options) {
    Field f;
    f.name = spec.name;
    f.choices = spec.choices;
    f.default_value = spec.default_value;
    f.has_live_override = lab.live_options.count(spec.name) > 0;
    const std::string value = cfg.options.has(spec.name) ? cfg.options.text(spec.name) : spec.default_value;
    const auto it = std::find(f.choices.begin(), f.choices.end(), value);
    f.choice = it == f.choices.end() ? 0 : int(it - f.choices.begin());
    std::snprintf(f.text, sizeof f.text, "%s", value.c_str());
    fields.push_back(std::move(f));
  }
}

LabConfig RunChoices::Apply(LabConfig cfg) const {
  cfg.ranks = std::clamp(ranks, 1, 64);
  if (has_bytes) cfg.bytes = std::max<std::uint64_t>(parse_size(bytes, "bytes"), dtype_size(cfg.dtype));
  // A field at the lab's default is left out, so it does not count as given: a lab may
  // refuse an option its mode does not use even at its default value (LabOptions::given).
  // Fields with a live override are always passed, or the override would come back.
  LabOptions options;
  for (const Field& f : fields) {
    const std::string value = f.choices.empty()
                                  ? std::string(f.text)
                                  : f.choices[std::size_t(std::clamp(f.choice, 0, int(f.choices.size()) - 1))];
    if (value != f.default_value || f.has_live_override) options.set(f.name, value);
  }
  cfg.options = options;
  return cfg;
}

void App::DrawControls() {
  Controls& c = controls;
  const std::size_t available = session->steps().size();
  ImGui::Text("dtlab-viz  |  %s  |  %d ranks  |  %s", clip_text(session->lab_name(), 200).c_str(),
              session->data().ranks, clip_text(session->status(), 400).c_str());  // (a trace's words: clipped)
  if (ImGui::Button(c.playing ? "Pause (space)" : "Play (space)")) c.playing = !c.playing;
  ImGui::SameLine();
  if (ImGui::Button("Step (->)")) StepOne();
  ImGui::SameLine();
  if (ImGui::Button("Step phase (shift ->)")) StepPhase();
  ImGui::SameLine();
  if (ImGui::Button("Restart (home)")) Restart();
  ImGui::SameLine();
  ImGui::SetNextItemWidth(120);
  ImGui::SliderFloat("speed (+/-)", &c.speed, 0.25f, 64.0f, "%.2f /s", ImGuiSliderFlags_Logarithmic);
  ImGui::SameLine();
  int cursor = int(std::min(c.cursor, available));
  const std::string format = std::string(session->step_name()) + " %d";
  ImGui::SetNextItemWidth(std::max(100.0f, ImGui::GetContentRegionAvail().x));
  if (ImGui::SliderInt("##scrub", &cursor, 0, int(available), format.c_str()) && !session->live()) {
    c.cursor = std::size_t(cursor);
    c.anim = 1;
  }
}

namespace {
// The next item on this line when `width` pixels are left for it, else on the next line.
void same_line_if_room(float width) {
  ImGui::SameLine();
  if (ImGui::GetContentRegionAvail().x < width) ImGui::NewLine();
}

float label_width(const std::string& text) {
  return ImGui::CalcTextSize(text.c_str()).x + ImGui::GetStyle().ItemInnerSpacing.x;
}
}  // namespace

void App::DrawRunChoices() {
  RunChoices& r = choices;
  auto label = [](const char* name) {  // the name before its field, so each value reads after its name
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted(name);
    ImGui::SameLine(0, 4);
  };
  label("next run: ranks");
  ImGui::SetNextItemWidth(90);
  ImGui::SliderInt("##ranks", &r.ranks, 1, 16);
  if (r.has_bytes) {
    same_line_if_room(70 + label_width("bytes"));
    label("bytes");
    ImGui::SetNextItemWidth(70);
    ImGui::InputText("##bytes", r.bytes, sizeof r.bytes);
  }
  for (RunChoices::Field& f : r.fields) {
    same_line_if_room((f.choices.empty() ? 60 : 100) + label_width(f.name));
    ImGui::PushID(f.name.c_str());
    label(f.name.c_str());
    if (f.choices.empty()) {
      ImGui::SetNextItemWidth(60);
      ImGui::InputText("##value", f.text, sizeof f.text);
    } else {
      ImGui::SetNextItemWidth(100);
      if (ImGui::BeginCombo("##value", f.choices[std::size_t(f.choice)].c_str())) {
        for (std::size_t i = 0; i < f.choices.size(); ++i)
          if (ImGui::Selectable(f.choices[i].c_str(), int(i) == f.choice)) f.choice = int(i);
        ImGui::EndCombo();
      }
    }
    ImGui::PopID();
  }
  same_line_if_room(label_width("(code: solutions track; Restart applies)"));
  ImGui::TextDisabled("(code: %s track; Restart applies)", ex::track_name());
  if (!r.error.empty()) ImGui::TextColored(ImVec4(1, 0.45f, 0.4f, 1), "%s", r.error.c_str());
}

}  // namespace dtl::viz
