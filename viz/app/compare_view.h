// Two runs side by side (dtlab-viz a.json b.json --compare): naive vs bucketed DDP, a pipeline
// of M = 8 vs M = 32 micro-batches. Each run's timeline on one time scale, the start of each
// one's timed step at the same x (zoom and pan move both), and the two reports' rows with
// their differences (viz/model/compare_model). Like the other views it keeps no lab state:
// what it draws comes from the two sessions every frame.
#pragma once

#include <memory>
#include <string>

#include "viz/app/views.h"
#include "viz/model/compare_model.h"

namespace dtl::viz {

struct CompareRun {
  std::unique_ptr<Session> session;
  std::string name;   // what the header calls it: the path given
  TimelineView view;  // its own view settings (toggles); the time window is shared
  double anchor = 0;  // ns: its timed step's start (CompareAlignment)
};

class CompareWindow {
 public:
  CompareWindow(std::unique_ptr<Session> a, std::string name_a, std::unique_ptr<Session> b, std::string name_b);
  void Frame();  // one frame of ImGui: the header, both timelines, the rows

 private:
  void DrawTimeline(CompareRun& run, const char* id, float height);
  void DrawRows(float height);
  CompareRun a_, b_;
  double rel0_ = 0, rel1_ = 1;  // the shared window: ns since each run's anchor
};

}  // namespace dtl::viz
