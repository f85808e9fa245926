// RunClock: the clock a lab times its work with. In a free run it is the steady clock. In
// a run stepped through a StepGate each thread (a rank's, or its comm stream's) keeps its
// own run time: the steady clock less the time it sat blocked beyond what a free run would
// have waited. When it wakes from a wait, its clock reads the later of when it began to wait
// and when what it waited for was done, in the run time of the thread that did it (a
// transfer is done when both sides had posted, plus the copy; a barrier when the last member
// arrived). So neither the learner's pauses nor the one-transfer-at-a-time order of stepping
// count: a stepped pipeline measures the bubble of a free one, a stepped ring the free
// ring's microseconds, in the terminal and the viewer alike (the trace's clock,
// Trace::now_ns, reads the same per-thread time).
//
// The threads backend installs its run's gate on each rank thread and comm stream (Install)
// and calls resume_at as each wait ends.
#pragma once

#include <chrono>

namespace dtl {

class StepGate;

struct RunClock {
  using duration = std::chrono::steady_clock::duration;
  using time_point = std::chrono::steady_clock::time_point;
  static time_point now();
  // A stepped run only (a no-op without a gate): from now on this thread's clock reads `at`.
  // Callers pass a time no earlier than the clock read when their wait began (the later of
  // that and when the awaited thing was done), so the clock never runs back.
  static void resume_at(time_point at);
  static bool stepped();    // a gate is installed on this thread
  static duration stall();  // steady clock − run time on this thread (0 in a free run)

  // While it lives, this thread keeps its own run time for `gate`'s stepped run (nullptr: a free
  // run, the steady clock).
  class Install {
   public:
    explicit Install(const StepGate* gate);
    ~Install();
    Install(const Install&) = delete;
    Install& operator=(const Install&) = delete;

   private:
    const StepGate* saved_;
  };
};

}  // namespace dtl
