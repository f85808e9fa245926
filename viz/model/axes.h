// Axes of the views, plain code so tests can check them: the timeline's time ticks (a
// 1-2-5 step in ns, µs, ms or s, chosen by the zoom) and the memory view's byte scale
// (a power-of-two step, labelled in B, KiB, MiB or GiB). Labels are made here, drawn by
// viz/app.
#pragma once

#include <string>
#include <vector>

namespace dtl::viz {

struct Tick {
  double value = 0;  // ns on the time axis, bytes on the memory axis
  std::string label;
};

// The 1-2-5 step (1, 2, 5, 10, 20, ... ns) that puts ticks at least min_px apart when
// [t0, t1] ns fills width_px, and the ticks inside the window. Labels count from `origin`
// (the start of the run), all in the unit of the largest one: "0.25 ms", "1.5 ms", "2 s".
double time_tick_step(double t0, double t1, float width_px, float min_px);
std::vector<Tick> time_ticks(double t0, double t1, double origin, float width_px, float min_px);
// `ns` in the unit that suits `magnitude` (ns, µs, ms, s) with the decimals `step` needs:
// format_duration(1.5e6, 5e5, 2e6) = "1.5 ms".
// `v` with `decimals` decimals, trailing zeros (and a bare point) dropped: "2.5", "40".
std::string trimmed(double v, int decimals);

std::string format_duration(double ns, double step, double magnitude);

// The memory axis: from 0 to `top` (the first tick at or above max_bytes) in a power-of-two
// step, at most max_ticks steps. Labels in the unit of `top`: "0.75 MiB", "1.5 MiB".
struct ByteScale {
  double top = 1;
  double step = 1;
  std::vector<Tick> ticks;  // 0, step, ..., top
};
ByteScale byte_scale(double max_bytes, int max_ticks);
// `bytes` in the unit that suits `magnitude` (B, KiB, MiB, GiB, TiB), at most 3 decimals,
// trailing zeros dropped: format_bytes(1.5 * 2^20, 2^21) = "1.5 MiB".
std::string format_bytes(double bytes, double magnitude);

}  // namespace dtl::viz
