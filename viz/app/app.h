// The dtlab-viz window: the controls bar and the four views laid out in one frame.
#pragma once

#include <memory>
#include <string>

#include "viz/app/views.h"

namespace dtl::viz {

// What the learner controls: play/pause, speed, where the cursor is. Toggles, not state.
struct Controls {
  bool playing = false;
  float speed = 2.0f;        // transfers per second while playing
  std::size_t cursor = 0;    // transfers shown
  float anim = 1.0f;         // animation of the latest transfer, 0..1
  bool restart_requested = false;
  // The side panel's choice for a restart (live runs).
  int algo = 1, ranks = 4;
  char bytes[16] = "1K";
};

struct App {
  std::unique_ptr<Session> session;
  Controls controls;
  RingView ring;
  TimelineView timeline;
  MemoryView memory;
  ReportView report;
  std::string solo_view;  // "", or one of ring/timeline/memory/report filling the window

  // Advances time by dt seconds (play, animation) and draws one frame of ImGui.
  void Frame(float dt);
  void StepOne();    // one transfer (right arrow)
  void StepPhase();  // until the algorithm step changes (shift + right arrow)
  void Restart();    // home: replay from the start, or run the lab again with the side panel's options
};

}  // namespace dtl::viz
