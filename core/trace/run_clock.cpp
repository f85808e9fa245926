#include "core/trace/run_clock.h"

#include "core/trace/step_gate.h"

namespace dtl {

namespace {
thread_local const StepGate* t_gate = nullptr;  // the run this thread belongs to, if stepped
}  // namespace

RunClock::time_point RunClock::now() {
  const time_point t = std::chrono::steady_clock::now();
  return t_gate ? t - std::chrono::duration_cast<duration>(t_gate->paused()) : t;
}

RunClock::Install::Install(const StepGate* gate) : saved_(t_gate) { t_gate = gate; }
RunClock::Install::~Install() { t_gate = saved_; }

}  // namespace dtl
