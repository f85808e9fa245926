// The dtlab-viz window: the controls bar, the live run's options, and the lab's views
// (Session::views), each a panel from the registry laid out by arrange_panels.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "viz/app/views.h"

namespace dtl::viz {

// What the learner controls: play/pause, speed, where the cursor is. Toggles, not state.
struct Controls {
  bool playing = false;
  float speed = 2.0f;      // steps per second while playing
  std::size_t cursor = 0;  // steps shown (transfers, or collectives)
  float anim = 1.0f;       // animation of the latest step, 0..1
};

// The side panel's choice for the next live run: the ranks and the lab's own options
// (LabInfo::options, edited as text or picked from their choices). Restart applies them.
struct RunChoices {
  struct Field {
    std::string name;
    std::vector<std::string> choices;  // empty: typed as text
    int choice = 0;
    char text[32] = "";
    // The lab's default, and whether a field left at it is passed on: not when the lab has
    // no live override for it, so it does not count as given (LabOptions::given).
    std::string default_value;
    bool has_live_override = false;
  };
  int ranks = 4;
  bool has_bytes = false;  // the lab reads --bytes
  char bytes[16] = "1K";
  std::vector<Field> fields;
  std::string error;  // why the last Restart did not start, shown beside the options

  void Load(const LabInfo& lab, const LabConfig& cfg);
  LabConfig Apply(LabConfig cfg) const;  // the choices over cfg (throws UsageError for a bad size)
};

struct App {
  std::unique_ptr<Session> session;
  Controls controls;
  RunChoices choices;
  PanelSettings settings;
  struct Placed {
    const PanelKind* kind;
    std::unique_ptr<Panel> panel;
  };
  std::vector<Placed> panels;  // the session's views that have a panel, in the lab's order
  std::string solo_view;       // "", or one of the lab's views filling the window (--view)

  void Open(std::unique_ptr<Session> s);  // takes the session, makes the panels of its views
  Panel* panel(ViewKind kind);            // nullptr when the lab does not show it
  // Advances time by dt seconds (play, animation) and draws one frame of ImGui.
  void Frame(float dt);
  void StepOne();    // one transfer or collective (right arrow)
  void StepPhase();  // until the algorithm step changes (shift + right arrow)
  void Restart();    // home: replay from the start, or run the lab again with the side panel's options

 private:
  void Advance(float dt);
  void HandleKeys();
  void DrawControls();
  void DrawRunChoices();
  void DrawPanels(const viz::Frame& f);
};

}  // namespace dtl::viz
