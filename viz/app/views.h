// The views of dtlab-viz. Each is a small struct with Draw(); what they hold are view
// settings (zoom, toggles), never lab state: everything drawn comes from the Session.
#pragma once

#include <imgui.h>

#include <cstddef>
#include <string>

#include "viz/app/session.h"

namespace dtl::viz {

// What every view needs this frame.
struct Frame {
  const Session& session;
  std::size_t cursor = 0;  // transfers applied so far (the step the learner is at)
  float anim = 1;          // 0..1: how far the transfer `cursor - 1` has travelled
  std::int64_t cursor_time() const;  // when transfer cursor-1 landed (start of trace if none)
};

// Colors shared by the views and their legends.
ImU32 kind_color(EventKind k);
ImU32 tag_color(int mem_tag);
ImU32 contribution_color(int count, int ranks);  // light (own data) → dark (all ranks' data)
void legend_swatch(ImU32 color, const char* text);
std::string human_bytes(double bytes);  // "1.5 KiB"

struct RingView {
  void Draw(const Frame& f);
};

struct TimelineView {
  TimeAxis axis;        // the visible window (zoom and pan are view settings)
  bool fitted = false;  // fit the whole trace on the first frame...
  float start_zoom = 1;  // ...then zoom this much closer around the cursor (--zoom)
  bool show_flows = true;
  void Draw(const Frame& f);
};

struct MemoryView {
  void Draw(const Frame& f);
};

struct ReportView {
  void Draw(const Frame& f);
};

}  // namespace dtl::viz
