#include "viz/app/app.h"

#include <algorithm>

#include "core/error.h"
#include "viz/model/opening.h"
#include "viz/model/panels.h"

namespace dtl::viz {

void App::Open(std::unique_ptr<Session> s) {
  session = std::move(s);
  std::vector<const PanelKind*> kinds;
  for (ViewKind v : session->views())
    if (const PanelKind* k = find_panel(v)) kinds.push_back(k);
  bool same = kinds.size() == panels.size();
  for (std::size_t i = 0; same && i < kinds.size(); ++i) same = panels[i].kind == kinds[i];
  if (!same) {  // a restart of the same lab keeps its panels (and their toggles)
    panels.clear();
    for (const PanelKind* k : kinds) panels.push_back({k, k->make(settings)});
  }
  if (session->live()) {
    choices.Load(*session->lab(), session->config());
    return;
  }
  // A replay opens on its timed step where the main view has something to show (opening.h).
  ViewKind main = kinds.empty() ? ViewKind::timeline : kinds.front()->kind;
  for (const PanelKind* k : kinds)
    if (view_kind_name(k->kind) == solo_view) main = k->kind;
  controls.cursor = opening_cursor(session->data(), session->index(), main);
  controls.anim = 1;
}

Panel* App::panel(ViewKind kind) {
  for (Placed& p : panels)
    if (p.kind->kind == kind) return p.panel.get();
  return nullptr;
}

void App::StepOne() {
  Controls& c = controls;
  const std::size_t n = session->steps().size();
  if (session->live() && c.cursor >= n) session->advance_one();
  if (c.cursor < n || session->live()) {
    c.cursor = std::min(c.cursor + 1, n + (session->live() ? 1 : 0));
    c.anim = 0;
  }
}

void App::StepPhase() {
  const auto& st = session->steps();
  const int step = controls.cursor > 0 && controls.cursor <= st.size() ? st[controls.cursor - 1].step : -1;
  for (int guard = 0; guard < 100000; ++guard) {
    StepOne();
    session->refresh();
    controls.anim = 1;
    const auto& now = session->steps();
    if (controls.cursor > now.size()) {  // live: wait until the released step is recorded
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
  for (Placed& p : panels) p.panel->Restart();
  if (!session->live()) return;
  const LabInfo& lab = *session->lab();
  LabConfig cfg;
  try {
    cfg = with_defaults(lab, choices.Apply(session->config()));  // a bad value keeps the old run
  } catch (const UsageError& e) {
    choices.error = e.what();
    return;
  }
  choices.error.clear();
  session.reset();  // finishes the old run first
  Open(Session::live(lab, cfg));
}

void App::Advance(float dt) {
  Controls& c = controls;
  const std::size_t available = session->steps().size();
  // Playing: one step every 1/speed seconds; the animation takes that long too.
  if (c.anim < 1) c.anim = std::min(1.0f, c.anim + dt * c.speed);
  if (c.playing && c.anim >= 1) {
    if (c.cursor < available || session->can_advance())
      StepOne();
    else if (session->finished())
      c.playing = false;
  }
  if (c.cursor > available && (!session->live() || session->finished())) c.cursor = available;
}

// Keyboard: space play/pause, right step, shift+right phase, left back, +/- speed, home restart.
void App::HandleKeys() {
  Controls& c = controls;
  ImGuiIO& io = ImGui::GetIO();
  if (io.WantTextInput) return;  // ImGui 1.86: named keys through GetKeyIndex, +/- as typed characters
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

void App::Frame(float dt) {
  session->refresh();
  Advance(dt);
  HandleKeys();
  ImGui::SetNextWindowPos(ImVec2(0, 0));
  ImGui::SetNextWindowSize(ImGui::GetIO().DisplaySize);
  ImGui::Begin("dtlab", nullptr,
               ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoSavedSettings |
                   ImGuiWindowFlags_NoBringToFrontOnFocus);
  DrawControls();
  if (session->live()) DrawRunChoices();
  DrawPanels(viz::Frame{*session, controls.cursor, controls.anim});
  ImGui::End();
}

void App::DrawPanels(const viz::Frame& f) {
  if (!solo_view.empty()) {  // one view filling the window (screenshots for the docs)
    for (Placed& p : panels)
      if (view_kind_name(p.kind->kind) == solo_view) {
        ImGui::BeginChild("solo", ImVec2(0, 0), true);
        p.panel->Draw(f);
        ImGui::EndChild();
      }
    return;
  }
  std::vector<ViewKind> kinds;
  for (const Placed& p : panels) kinds.push_back(p.kind->kind);
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float gap = ImGui::GetStyle().ItemSpacing.x, scrollbar = ImGui::GetStyle().ScrollbarSize;
  // Laid out in a scrolling region: a small window stacks the panels (arrange_panels) and
  // scrolls them instead of shrinking them to specks.
  std::vector<PanelPlace> places = arrange_panels(kinds, {0, 0, avail.x, avail.y}, gap);
  const bool scrolls =
      std::any_of(places.begin(), places.end(), [&](const PanelPlace& p) { return p.rect.y + p.rect.h > avail.y + 1; });
  if (scrolls) places = arrange_panels(kinds, {0, 0, avail.x - scrollbar - gap, avail.y}, gap);
  ImGui::BeginChild("panels", avail, false,
                    scrolls ? 0 : ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse);
  for (const PanelPlace& place : places) {
    Placed& p =
        *std::find_if(panels.begin(), panels.end(), [&](const Placed& x) { return x.kind->kind == place.kind; });
    ImGui::SetCursorPos(ImVec2(place.rect.x, place.rect.y));
    ImGui::BeginChild(std::string(view_kind_name(place.kind)).c_str(), ImVec2(place.rect.w, place.rect.h), true);
    ImGui::TextUnformatted(p.kind->title);
    p.panel->Draw(f);
    ImGui::EndChild();
  }
  ImGui::EndChild();
}

}  // namespace dtl::viz
