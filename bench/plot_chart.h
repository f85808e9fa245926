// Line charts for the peer benchmark: series of (x, y) points, log or linear axes with
// ticks and grid, a legend, horizontal lines (a ceiling) and vertical markers (a
// crossover), written to a PNG (plot_canvas.h).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "bench/plot_canvas.h"

namespace dtl::plot {

struct Series {
  std::string name;
  std::vector<double> x, y;
  Rgb color;
  bool dashed = false, markers = true;
};

struct Marker {  // a horizontal (at y; named in the legend) or vertical (at x; named beside it) line
  double at = 0;
  std::string label;
  Rgb color;
  bool dashed = true;
};

struct LineChart {
  std::string title, x_label, y_label;
  bool log_x = true, log_y = true;
  std::vector<Series> series;
  std::vector<Marker> horizontal, vertical;
  std::function<std::string(double)> x_tick = nullptr;  // default: 1K, 64K, 1M, ...
  std::vector<double> x_ticks;                          // where the x ticks go (default: chosen to fit)
};

// The i-th colour of a palette that stays apart on white.
Rgb palette(int i);

// Draws `chart` at width × height pixels into `path`; throws dtl::Error if it cannot write
// or there is nothing to draw.
void write_chart_png(const LineChart& chart, const std::string& path, int width = 1100, int height = 640);

}  // namespace dtl::plot
