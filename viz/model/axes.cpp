#include "viz/model/axes.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace dtl::viz {

std::string trimmed(double v, int decimals) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", std::clamp(decimals, 0, 9), v);
  std::string s = buf;
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s == "-0" ? "0" : s;
}

namespace {

// Decimals that show a multiple of `step` exactly enough in `unit`.
int decimals_for(double step, double unit) {
  const double r = step / unit;
  return r >= 1 ? 0 : int(std::ceil(-std::log10(r) - 1e-9));
}

}  // namespace

double time_tick_step(double t0, double t1, float width_px, float min_px) {
  const double span = std::max(t1 - t0, 1e-9);
  const double want = span * double(std::max(1.0f, min_px)) / double(std::max(1.0f, width_px));  // ns per min_px
  for (double decade = 1;; decade *= 10)
    for (double m : {1.0, 2.0, 5.0})
      if (m * decade >= want || decade > 1e15) return m * decade;
}

std::string format_duration(double ns, double step, double magnitude) {
  static const struct {
    double ns;
    const char* name;
  } units[] = {{1e9, "s"}, {1e6, "ms"}, {1e3, "µs"}, {1, "ns"}};
  for (const auto& u : units)
    if (std::fabs(magnitude) >= u.ns || u.ns == 1) return trimmed(ns / u.ns, decimals_for(step, u.ns)) + " " + u.name;
  return "";
}

std::vector<Tick> time_ticks(double t0, double t1, double origin, float width_px, float min_px) {
  std::vector<Tick> out;
  if (!(t1 > t0)) return out;
  const double step = time_tick_step(t0, t1, width_px, min_px);
  const double magnitude = std::max(std::fabs(t0 - origin), std::fabs(t1 - origin));
  for (double k = std::ceil((t0 - origin) / step); origin + k * step <= t1; k += 1) {
    const double v = k * step;
    out.push_back({origin + v, format_duration(v, step, magnitude)});
    if (out.size() > 1000) break;  // min_px keeps this near width_px / min_px; a guard, not a limit
  }
  return out;
}

std::string format_bytes(double bytes, double magnitude) {
  static const char* names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (u < 4 && std::fabs(magnitude) >= std::ldexp(1.0, 10 * (u + 1))) ++u;
  return trimmed(bytes / std::ldexp(1.0, 10 * u), u == 0 ? 0 : 3) + " " + names[u];
}

ByteScale byte_scale(double max_bytes, int max_ticks) {
  ByteScale s;
  const double n = double(std::max(1, max_ticks));
  s.step = 1;
  while (s.step * n < max_bytes && s.step < 0x1p60) s.step *= 2;
  s.top = std::max(1.0, std::ceil(max_bytes / s.step)) * s.step;
  for (double v = 0; v <= s.top; v += s.step) s.ticks.push_back({v, format_bytes(v, s.top)});
  return s;
}

}  // namespace dtl::viz
