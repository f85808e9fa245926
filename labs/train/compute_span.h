// A compute span of a lab (forward, backward, optimizer, ...) on the rank's main stream.
// On the straggler rank (--slow-rank R:FACTOR) the span is stretched to FACTOR times its
// real length by sleeping at its end: a slower GPU, not a busier CPU, so the other ranks'
// threads keep the cores. The timeline shows the longer span and everyone waiting on it.
#pragma once

#include <chrono>
#include <thread>

#include "core/comm/comm.h"
#include "core/trace/run_clock.h"
#include "core/trace/trace.h"
#include "labs/lab.h"
#include "labs/train/mlp.h"

namespace dtl {

class ComputeSpan {
 public:
  // Labelled with the pass's name ("forward", "backward", "optimizer") and its role.
  ComputeSpan(Comm& comm, const LabConfig& cfg, Pass pass, int step = -1)
      : factor_(comm.global_rank() == cfg.slow_rank ? cfg.slow_factor : 1.0),
        span_(comm.trace(), comm.global_rank(), EventKind::compute,
              comm.trace() ? comm.trace()->label(pass_name(pass), Role{.pass = pass}) : 0, step) {}
  ~ComputeSpan() { pace(); }
  // Stretch the work done since the last pace() now. Call it at the points where the
  // computation hands something to others (a layer's gradients ready for a bucket), so a
  // straggler is late at every such point, not only at the end.
  void pace() {
    if (factor_ <= 1.0) return;
    std::this_thread::sleep_for((RunClock::now() - last_) * (factor_ - 1.0));
    last_ = RunClock::now();
  }
  ComputeSpan(const ComputeSpan&) = delete;
  ComputeSpan& operator=(const ComputeSpan&) = delete;

 private:
  double factor_;
  RunClock::time_point last_ = RunClock::now();
  ScopedSpan span_;  // declared last: closes after the destructor's sleep, so the stretch is inside it
};

// Per-layer compute spans from the model's hooks ("forward 2", "backward 2"), nested in
// the lab's forward/backward ComputeSpan, so a timeline shows each layer's work and what
// the lab does between layers (DDP launches a bucket's all-reduce there: StepClock nests
// the lab's hooks around these, labs/train/step_clock.h). Each layer's
// share of a straggler's stretch is paced inside its span.
class LayerSpans {
 public:
  LayerSpans(Comm& comm, int layers, int step) : trace_(comm.trace()), rank_(comm.global_rank()), step_(step) {
    if (!trace_) return;
    for (int l = 0; l < layers; ++l) {
      forward_.push_back(
          trace_->label("forward " + std::to_string(l), Role{.pass = Pass::forward, .block = std::int16_t(l)}));
      backward_.push_back(
          trace_->label("backward " + std::to_string(l), Role{.pass = Pass::backward, .block = std::int16_t(l)}));
    }
  }
  LayerHooks forward_hooks(ComputeSpan& span) { return hooks(span, forward_); }
  LayerHooks backward_hooks(ComputeSpan& span) {
    LayerHooks h = hooks(span, backward_);
    std::swap(h.before_forward, h.before_backward);
    std::swap(h.after_forward, h.after_backward);
    return h;
  }

 private:
  // Hooks in forward's slots: open a span before the layer, close it after.
  LayerHooks hooks(ComputeSpan& span, const std::vector<std::uint16_t>& labels) {
    LayerHooks h;
    h.before_forward = [this](int) { begin_ = trace_ ? trace_->now_ns() : 0; };
    h.after_forward = [this, &span, &labels](int l) {
      span.pace();
      if (trace_ && l >= 0 && std::size_t(l) < labels.size())
        trace_->record(Event{.begin_ns = begin_,
                             .end_ns = trace_->now_ns(),
                             .rank = rank_,
                             .step = step_,
                             .label = labels[std::size_t(l)],
                             .kind = EventKind::compute});
    };
    return h;
  }
  Trace* trace_;
  int rank_, step_;
  std::int64_t begin_ = 0;
  std::vector<std::uint16_t> forward_, backward_;
};

}  // namespace dtl
