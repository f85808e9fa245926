#include "viz/app/app.h"

#include <algorithm>

#include "core/error.h"
#include "core/util/units.h"

namespace dtl::viz {

namespace {
const char* kAlgos[] = {"naive", "ring", "tree", "rhd"};
}

void App::StepOne() {
  Controls& c = controls;
  if (session->live() && c.cursor >= session->transfers().size()) session->advance_one();
  if (c.cursor < session->transfers().size() || session->live()) {
    c.cursor = std::min(c.cursor + 1, session->transfers().size() + (session->live() ? 1 : 0));
    c.anim = 0;
  }
}

void App::StepPhase() {
  const auto& tr = session->transfers();
  const int step = controls.cursor > 0 && controls.cursor <= tr.size() ? tr[controls.cursor - 1].step : -1;
  for (int guard = 0; guard < 100000; ++guard) {
    StepOne();
    session->refresh();
    controls.anim = 1;
    const auto& now = session->transfers();
    if (controls.cursor > now.size()) {  // live: wait until the released transfer is recorded
      if (session->finished()) break;
      continue;
    }
    if (controls.cursor == now.size() && (!session->live() || session->finished())) break;
    if (controls.cursor > 0 && now[controls.cursor - 1].step != step) break;
  }
}

void App::Restart() {
  Controls& c = controls;
  c.cursor = 0;
  c.anim = 1;
  c.playing = false;
  timeline.fitted = false;
  if (!session->live()) return;
  LabConfig cfg = session->config();
  cfg.options.set("algo", kAlgos[std::clamp(c.algo, 0, 3)]);
  cfg.ranks = std::clamp(c.ranks, 1, 64);
  try {
    cfg.bytes = std::max<std::uint64_t>(parse_size(c.bytes, "bytes"), dtype_size(cfg.dtype));
  } catch (const Error&) {
  }
  const LabInfo* lab = find_lab(session->lab_name());
  session.reset();  // finishes the old run first
  session = Session::live(*lab, cfg);
}

void App::Frame(float dt) {
  Controls& c = controls;
  session->refresh();
  const std::size_t available = session->transfers().size();
  // Playing: one transfer every 1/speed seconds; the animation takes that long too.
  if (c.anim < 1) c.anim = std::min(1.0f, c.anim + dt * c.speed);
  if (c.playing && c.anim >= 1) {
    if (c.cursor < available || session->can_advance()) StepOne();
    else if (session->finished()) c.playing = false;
  }
  if (c.cursor > available && !session->live()) c.cursor = available;

  // Keyboard: space play/pause, right step, shift+right phase, +/- speed, home restart.
  ImGuiIO& io = ImGui::GetIO();
  if (!io.WantTextInput) {  // ImGui 1.86: named keys through GetKeyIndex, +/- as typed characters
    auto pressed = [](ImGuiKey k) { return ImGui::IsKeyPressed(ImGui::GetKeyIndex(k)); };
    if (pressed(ImGuiKey_Space)) c.playing = !c.playing;
    if (pressed(ImGuiKey_RightArrow)) io.KeyShift ? StepPhase() : StepOne();
    if (pressed(ImGuiKey_LeftArrow) && c.cursor > 0 && !session->live()) c.cursor--;
    for (int i = 0; i < io.InputQueueCharacters.Size; ++i) {
      if (io.InputQueueCharacters[i] == '+' || io.InputQueueCharacters[i] == '=') c.speed = std::min(64.0f, c.speed * 2);
      if (io.InputQueueCharacters[i] == '-') c.speed = std::max(0.25f, c.speed / 2);
    }
    if (pressed(ImGuiKey_Home)) Restart();
  }

  const ImVec2 size = io.DisplaySize;
  ImGui::SetNextWindowPos(ImVec2(0, 0));
  ImGui::SetNextWindowSize(size);
  ImGui::Begin("dtlab", nullptr, ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoSavedSettings |
                                     ImGuiWindowFlags_NoBringToFrontOnFocus);
  // Controls bar.
  ImGui::Text("dtlab-viz  |  %s  |  %d ranks  |  %s", session->lab_name().c_str(), session->data().ranks,
              session->status().c_str());
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
  ImGui::SetNextItemWidth(std::max(100.0f, ImGui::GetContentRegionAvail().x));
  if (ImGui::SliderInt("##scrub", &cursor, 0, int(available), "transfer %d") && !session->live()) {
    c.cursor = std::size_t(cursor);
    c.anim = 1;
  }
  if (session->live()) {  // the side panel's options for the next run
    ImGui::SetNextItemWidth(90);
    ImGui::Combo("algorithm", &c.algo, kAlgos, 4);
    ImGui::SameLine();
    ImGui::SetNextItemWidth(90);
    ImGui::SliderInt("ranks", &c.ranks, 1, 16);
    ImGui::SameLine();
    ImGui::SetNextItemWidth(70);
    ImGui::InputText("bytes", c.bytes, sizeof c.bytes);
    ImGui::SameLine();
    ImGui::TextDisabled("(code: %s track; Restart applies)", DTL_TRACK_NAME);
  }

  const viz::Frame f{*session, c.cursor, c.anim};
  if (!solo_view.empty()) {  // one view filling the window (screenshots for the docs)
    ImGui::BeginChild("solo", ImVec2(0, 0), true);
    if (solo_view == "ring") ring.Draw(f);
    else if (solo_view == "timeline") timeline.Draw(f);
    else if (solo_view == "memory") memory.Draw(f);
    else report.Draw(f);
    ImGui::EndChild();
    ImGui::End();
    return;
  }
  const float top_h = std::max(200.0f, ImGui::GetContentRegionAvail().y * 0.58f);
  const float ring_w = ImGui::GetContentRegionAvail().x * 0.5f;
  ImGui::BeginChild("ring", ImVec2(ring_w, top_h), true);
  ImGui::TextUnformatted("Ring: chunks and their contributions");
  ring.Draw(f);
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginGroup();
  ImGui::BeginChild("report", ImVec2(0, top_h * 0.55f), true);
  ImGui::TextUnformatted("Report: measured vs predicted");
  report.Draw(f);
  ImGui::EndChild();
  ImGui::BeginChild("memory", ImVec2(0, top_h * 0.45f - ImGui::GetStyle().ItemSpacing.y), true);
  ImGui::TextUnformatted("Memory per rank");
  memory.Draw(f);
  ImGui::EndChild();
  ImGui::EndGroup();
  ImGui::BeginChild("timeline", ImVec2(0, 0), true);
  ImGui::TextUnformatted("Timeline");
  timeline.Draw(f);
  ImGui::EndChild();
  ImGui::End();
}

}  // namespace dtl::viz
