// RunClock: the clock a lab times its work with. It is the steady clock, less the time a
// learner stepping the run kept the whole world waiting (StepGate::paused): in a stepped
// run every rank sleeps while the learner thinks, and that time is nobody's work. So a
// stepped pipeline measures the bubble a free run measures, and a stepped ring the same
// microseconds, in the terminal and in the viewer alike (the trace's clock, Trace::now_ns,
// leaves out the same time).
//
// The threads backend installs its run's gate on each rank thread and comm stream (Install);
// elsewhere (a free run, MPI, NCCL) RunClock::now() is the steady clock.
#pragma once

#include <chrono>

namespace dtl {

class StepGate;

struct RunClock {
  using duration = std::chrono::steady_clock::duration;
  using time_point = std::chrono::steady_clock::time_point;
  static time_point now();

  // While it lives, this thread's RunClock leaves out `gate`'s pauses (nullptr: none).
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
