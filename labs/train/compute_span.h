// A compute span of a lab (forward, backward, optimizer, ...) on the rank's main stream.
// On the straggler rank (--slow-rank R:FACTOR) the span is stretched to FACTOR times its
// real length by sleeping at its end: a slower GPU, not a busier CPU, so the other ranks'
// threads keep the cores. The timeline shows the longer span and everyone waiting on it.
#pragma once

#include <chrono>
#include <thread>

#include "core/comm/comm.h"
#include "core/trace/trace.h"
#include "labs/lab.h"

namespace dtl {

class ComputeSpan {
 public:
  ComputeSpan(Comm& comm, const LabConfig& cfg, const char* name, int step = -1)
      : factor_(comm.global_rank() == cfg.slow_rank ? cfg.slow_factor : 1.0),
        span_(comm.trace(), comm.global_rank(), EventKind::compute, comm.trace() ? comm.trace()->label(name) : 0, step) {}
  ~ComputeSpan() { pace(); }
  // Stretch the work done since the last pace() now. Call it at the points where the
  // computation hands something to others (a layer's gradients ready for a bucket), so a
  // straggler is late at every such point, not only at the end.
  void pace() {
    if (factor_ <= 1.0) return;
    std::this_thread::sleep_for((std::chrono::steady_clock::now() - last_) * (factor_ - 1.0));
    last_ = std::chrono::steady_clock::now();
  }
  ComputeSpan(const ComputeSpan&) = delete;
  ComputeSpan& operator=(const ComputeSpan&) = delete;

 private:
  double factor_;
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
  ScopedSpan span_;  // declared last: closes after the destructor's sleep, so the stretch is inside it
};

}  // namespace dtl
