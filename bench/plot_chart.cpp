#include "bench/plot_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/error.h"

namespace dtl::plot {

Rgb palette(int i) {
  static const Rgb colors[] = {{31, 119, 180}, {214, 39, 40},   {44, 160, 44},  {255, 127, 14},  {148, 103, 189},
                               {140, 86, 75},  {227, 119, 194}, {23, 190, 207}, {127, 127, 127}, {188, 189, 34}};
  return colors[i % 10];
}

namespace {

const Rgb kInk{30, 30, 30}, kGrid{225, 225, 225};
constexpr int kLeft = 100, kRight = 300, kTop = 64, kBottom = 70;  // margins; the legend sits right

// One axis: data range (log10 of it when logarithmic) mapped onto pixels [p0, p1].
struct Axis {
  bool log = true;
  double lo = 0, hi = 1, p0 = 0, p1 = 1;
  double t(double v) const { return log ? std::log10(v) : v; }
  double px(double v) const { return p0 + (t(v) - lo) / (hi - lo) * (p1 - p0); }
};

Axis make_axis(std::vector<double> values, bool log, double p0, double p1) {
  Axis a{log, std::numeric_limits<double>::max(), std::numeric_limits<double>::lowest(), p0, p1};
  for (double v : values)
    if (std::isfinite(v) && (!log || v > 0)) a.lo = std::min(a.lo, a.t(v)), a.hi = std::max(a.hi, a.t(v));
  if (a.lo > a.hi) throw Error("a chart needs at least one finite point");
  const double pad = std::max(0.05 * (a.hi - a.lo), log ? 0.1 : 1e-9);
  a.lo -= pad, a.hi += pad;
  if (!log) a.lo = std::min(a.lo, 0.0);
  return a;
}

std::string size_label(double bytes) {
  const char* units[] = {"B", "K", "M", "G"};
  int u = 0;
  while (bytes >= 1024 && u < 3) bytes /= 1024, ++u;
  char s[32];
  std::snprintf(s, sizeof s, "%g%s", bytes, units[u]);
  return s;
}

std::string number_label(double v) {
  char s[32];
  std::snprintf(s, sizeof s, "%g", v);
  return s;
}

// Tick values: powers of 2 (x, sizes) or 1-2-5 × powers of 10, about `most` of them.
std::vector<double> ticks(const Axis& a, bool powers_of_two, int most) {
  std::vector<double> out;
  if (!a.log) {
    const double raw = (a.hi - a.lo) / most, mag = std::pow(10, std::floor(std::log10(raw)));
    const double step = raw / mag < 2 ? 2 * mag : raw / mag < 5 ? 5 * mag : 10 * mag;
    for (double v = std::ceil(a.lo / step) * step; v <= a.hi; v += step) out.push_back(v);
    return out;
  }
  if (powers_of_two) {
    const double lo2 = a.lo / std::log10(2), hi2 = a.hi / std::log10(2);
    const int step = std::max(1, int(std::ceil((hi2 - lo2) / most)));
    for (int e = int(std::ceil(lo2)); e <= int(std::floor(hi2)); ++e)
      if (e % step == 0) out.push_back(std::pow(2.0, e));
    return out;
  }
  const bool fine = a.hi - a.lo < 2.5;
  for (int e = int(std::floor(a.lo)); e <= int(std::ceil(a.hi)); ++e)
    for (double m : fine ? std::vector<double>{1, 2, 5} : std::vector<double>{1}) {
      const double v = m * std::pow(10.0, e);
      if (a.t(v) >= a.lo && a.t(v) <= a.hi) out.push_back(v);
    }
  return out;
}

void draw_frame(Canvas& c, const LineChart& ch, const Axis& x, const Axis& y) {
  const int x0 = kLeft, x1 = c.width() - kRight, y0 = kTop, y1 = c.height() - kBottom;
  for (double v : ch.x_ticks.empty() ? ticks(x, !ch.x_tick, 10) : ch.x_ticks) {
    const double px = x.px(v);
    c.line(px, y0, px, y1, kGrid, 1);
    const std::string s = ch.x_tick ? ch.x_tick(v) : size_label(v);
    c.text(int(px) - Canvas::text_width(s) / 2, y1 + 8, s, kInk);
  }
  for (double v : ticks(y, false, 8)) {
    const double py = y.px(v);
    c.line(x0, py, x1, py, kGrid, 1);
    const std::string s = number_label(v);
    c.text(x0 - 8 - Canvas::text_width(s), int(py) - 7, s, kInk);
  }
  c.line(x0, y1, x1, y1, kInk, 2);
  c.line(x0, y0, x0, y1, kInk, 2);
  c.text(kLeft, 12, ch.title, kInk, 2);
  c.text((x0 + x1 - Canvas::text_width(ch.x_label)) / 2, y1 + 36, ch.x_label, kInk);
  c.text(8, y0 - 22, ch.y_label, kInk);
}

void draw_markers(Canvas& c, const LineChart& ch, const Axis& x, const Axis& y) {
  const int x0 = kLeft, x1 = c.width() - kRight, y0 = kTop, y1 = c.height() - kBottom;
  for (const Marker& m : ch.horizontal) {  // labelled in the legend (draw_series)
    const double py = y.px(m.at);
    c.line(x0, py, x1, py, m.color, 2, m.dashed ? 8 : 0);
  }
  int row = 0;
  for (const Marker& m : ch.vertical) {
    const double px = x.px(m.at);
    c.line(px, y0, px, y1, m.color, 2, m.dashed ? 6 : 0);
    const int w = Canvas::text_width(m.label);  // inside the plot, left of the line if it would spill
    c.text(px + 4 + w > x1 ? int(px) - 4 - w : int(px) + 4, y1 - 24 - 18 * (row++ % 6), m.label, m.color);
  }
}

void legend_entry(Canvas& c, int row, const std::string& name, Rgb color, bool dashed) {
  const int lx = c.width() - kRight + 16, ly = kTop + 22 * row;
  c.line(lx, ly + 7, lx + 28, ly + 7, color, 3, dashed ? 7 : 0);
  c.text(lx + 36, ly, name, kInk);
}

void draw_series(Canvas& c, const LineChart& ch, const Axis& x, const Axis& y) {
  int row = 0;
  for (const Series& s : ch.series) {
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      if (i > 0) c.line(x.px(s.x[i - 1]), y.px(s.y[i - 1]), x.px(s.x[i]), y.px(s.y[i]), s.color, 3, s.dashed ? 7 : 0);
      if (s.markers)
        c.fill_rect(int(x.px(s.x[i])) - 4, int(y.px(s.y[i])) - 4, int(x.px(s.x[i])) + 5, int(y.px(s.y[i])) + 5,
                    s.color);
    }
    legend_entry(c, row++, s.name, s.color, s.dashed);
  }
  for (const Marker& m : ch.horizontal) legend_entry(c, row++, m.label, m.color, m.dashed);
}

}  // namespace

void write_chart_png(const LineChart& ch, const std::string& path, int width, int height) {
  std::vector<double> xs, ys;
  for (const Series& s : ch.series)
    xs.insert(xs.end(), s.x.begin(), s.x.end()), ys.insert(ys.end(), s.y.begin(), s.y.end());
  for (const Marker& m : ch.horizontal) ys.push_back(m.at);
  for (const Marker& m : ch.vertical) xs.push_back(m.at);
  Canvas c(width, height);
  const Axis x = make_axis(xs, ch.log_x, kLeft, width - kRight);
  const Axis y = make_axis(ys, ch.log_y, height - kBottom, kTop);
  draw_frame(c, ch, x, y);
  draw_markers(c, ch, x, y);
  draw_series(c, ch, x, y);
  c.save_png(path);
}

}  // namespace dtl::plot
