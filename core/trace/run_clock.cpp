#include "core/trace/run_clock.h"

#include <algorithm>

namespace dtl {

namespace {
thread_local const StepGate* t_gate = nullptr;  // the stepped run this thread belongs to
thread_local RunClock::duration t_stall{0};     // steady − run time on this thread
}  // namespace

RunClock::time_point RunClock::now() { return std::chrono::steady_clock::now() - t_stall; }

void RunClock::resume_at(time_point at) {
  if (!t_gate) return;
  t_stall = std::max(duration{0}, std::chrono::steady_clock::now() - at);
}

bool RunClock::stepped() { return t_gate != nullptr; }
RunClock::duration RunClock::stall() { return t_stall; }

RunClock::Install::Install(const StepGate* gate) : saved_(t_gate) {
  t_gate = gate;
  t_stall = duration{0};
}
RunClock::Install::~Install() {
  t_gate = saved_;
  t_stall = duration{0};
}

}  // namespace dtl
