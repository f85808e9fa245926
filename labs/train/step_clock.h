// A training step's measurement, kept apart from its algorithm: the step's clock, the time
// the rank blocks on communication, and the compute spans the timeline draws (forward,
// backward, optimizer, and one per layer inside forward and backward) with a straggler's
// pacing. A lab's step says what it computes and where it waits:
//
//   StepClock clock(comm, cfg, layers, step);
//   y = clock.compute(Pass::forward, algorithm_hooks, [&](const LayerHooks& h) { return model.forward(x, rows, h); });
//   clock.waiting([&] { wait_for_buckets(pending); });
//   clock.compute(Pass::optimizer, [&] { opt.step(...); });
//
// and the clock chains its per-layer spans inside the algorithm's layer hooks (nest).
#pragma once

#include <chrono>
#include <type_traits>
#include <utility>

#include "core/trace/run_clock.h"
#include "labs/train/compute_span.h"

namespace dtl {

// `outer`'s hooks around `inner`'s: before a layer the outer hook runs first, after it the
// inner one does. With the algorithm outside and the spans inside, a layer's span holds only
// its compute, and the algorithm's after-hook sees the layer's span closed (its gradients final).
inline LayerHooks nest(LayerHooks outer, LayerHooks inner) {
  using Hook = std::function<void(int)>;
  const auto in_order = [](Hook first, Hook second) -> Hook {
    if (!first) return second;
    if (!second) return first;
    return [first, second](int l) {
      first(l);
      second(l);
    };
  };
  return {in_order(outer.before_forward, inner.before_forward), in_order(inner.after_forward, outer.after_forward),
          in_order(outer.before_backward, inner.before_backward), in_order(inner.after_backward, outer.after_backward)};
}

class StepClock {
 public:
  StepClock(Comm& comm, const LabConfig& cfg, int layers, int step)
      : comm_(comm), cfg_(cfg), step_(step), layers_(comm, layers, step), start_(now()) {}

  // Seconds on the trace's clock (the one its events are stamped with), else RunClock: both
  // leave out a stepped run's pauses for the learner.
  double now() const {
    if (comm_.trace()) return double(comm_.trace()->now_ns()) * 1e-9;
    return std::chrono::duration<double>(RunClock::now().time_since_epoch()).count();
  }
  double start() const { return start_; }
  double elapsed() const { return now() - start_; }

  // Runs work(hooks) in a compute span of `pass` (forward or backward): `hooks` are the
  // algorithm's layer hooks with the per-layer spans nested inside. Returns work's result.
  template <typename Work>
  decltype(auto) compute(Pass pass, const LayerHooks& algorithm, Work&& work) {
    ComputeSpan span(comm_, cfg_, pass, step_);
    LayerHooks spans = pass == Pass::backward ? layers_.backward_hooks(span) : layers_.forward_hooks(span);
    if (pass == Pass::backward)  // layer 0's span closes last: backward's gradients are all final
      spans.after_backward = [after = spans.after_backward, this](int l) {
        after(l);
        if (l == 0) backward_end_ = now();
      };
    return std::forward<Work>(work)(nest(algorithm, spans));
  }
  // A compute span with no layers (the optimizer step); returns the seconds it took.
  template <typename Work>
  double compute(Pass pass, Work&& work) {
    const double from = now();
    {
      ComputeSpan span(comm_, cfg_, pass, step_);
      std::forward<Work>(work)();
    }
    return now() - from;
  }

  // Runs `wait`, which blocks on communication, and counts its time as exposed. Returns it.
  template <typename Wait>
  double waiting(Wait&& wait) {
    const double from = now();
    std::forward<Wait>(wait)();
    const double waited = now() - from;
    exposed_ += waited;
    return waited;
  }
  double exposed() const { return exposed_; }
  // When the last backward layer's span closed in this step (0: no backward ran).
  double backward_end() const { return backward_end_; }

 private:
  Comm& comm_;
  const LabConfig& cfg_;
  int step_;
  LayerSpans layers_;
  double start_, exposed_ = 0, backward_end_ = 0;
};

}  // namespace dtl
