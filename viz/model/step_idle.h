// Idle per training step, by the timeline's one definition (issue 47): a rank is idle when
// its compute has no work (BusyIndex: no compute span runs on it; communication, a wait for
// a slower rank and a pipeline's bubble are idle). The timeline's "idle in view" is
// mean_idle over the window shown; `dtlab-viz TRACE --idle` prints step_idle, and
// tests/viz/step_idle_test.cpp compares it with each lab's report.
#pragma once

#include <string>
#include <vector>

#include "viz/model/trace_index.h"

namespace dtl::viz {

// The mean over ranks of the idle fraction of [window.begin, window.end): the timeline's
// "idle in view" when the window is the one shown.
double mean_idle(const BusyIndex& busy, int ranks, TimeRange window);

// What the trace's figures are: "simulated" (meta simulated = true: dtlab simulate), else "measured".
const char* figure_kind(const TraceData& d);

struct StepIdle {
  int step = 0;
  TimeRange window;  // the step's first action (forward, backward or W span) to its last, any rank
  double idle = 0;   // mean_idle over the window: every compute span is work
  // The same with only the forward, backward and W spans as work: a lab's bubble (1 − Σ busy
  // / (N · window)). Above idle by the other compute in the window (an optimizer step of a
  // stage done early), equal without any.
  double actions_idle = 0;
};

// The steps of the first timed phase (a simulated trace: of every phase of its name), a
// measured run's step 0 (a warm-up the labs do not time) left out: for
// each step number its compute spans carry, the window of its forward, backward and W spans
// and the idle over it. Empty when no span carries a step.
std::vector<StepIdle> step_idle(const TraceData& d, const TraceIndex& x);

// The steps' idle (actions_only: actions_idle) aggregated as the labs aggregate a per-step figure (labs/measure.h
// run_means, then the median): `runs` runs of consecutive steps, each run's mean, the median
// of those. runs <= 0 or more runs than steps: the mean of all steps.
double median_of_run_means(const std::vector<StepIdle>& steps, int runs, bool actions_only = false);

// The text `dtlab-viz TRACE --idle` prints: each step's window and idle, their aggregate, and
// the report's rows that are idle shares (a pipeline's bubble) beside it, each labelled.
std::string describe_step_idle(const TraceData& d, const TraceIndex& x);

}  // namespace dtl::viz
