// The terminal loss curve (loss_chart.h).
#include "labs/gpt/loss_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace dtl {

namespace {

// Each series' mean y per column (NaN where a column has no point): what the chart draws,
// so its y range is taken from these, not from single points no column shows.
using Columns = std::vector<std::vector<double>>;

Columns column_means(const std::vector<ChartSeries>& series, std::size_t width, double& x0, double& x1) {
  x0 = INFINITY, x1 = -INFINITY;
  for (const ChartSeries& s : series)
    for (double x : s.x) x0 = std::min(x0, x), x1 = std::max(x1, x);
  if (!(x0 < x1)) x1 = x0 + 1;  // one point (or none): a range to place it in
  Columns means;
  for (const ChartSeries& s : series) {
    std::vector<double> sum(width, 0);
    std::vector<int> n(width, 0);
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      if (!std::isfinite(s.y[i])) continue;  // a diverged run's NaN has no place on the chart
      const auto c = std::size_t(std::lround((s.x[i] - x0) / (x1 - x0) * double(width - 1)));
      sum[c] += s.y[i], ++n[c];
    }
    means.emplace_back(width, NAN);
    for (std::size_t c = 0; c < width; ++c)
      if (n[c] > 0) means.back()[c] = sum[c] / n[c];
  }
  return means;
}

std::string number(double v, const char* format) {
  char buf[32];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string right_aligned(const std::string& s, std::size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

// The x axis under the grid (which starts `indent` + 2 columns in) and its labels: the
// first x at the left, the name in the middle, the last x at the right.
std::vector<std::string> x_axis(std::size_t indent, std::size_t width, const std::string& left, const std::string& name,
                                const std::string& right) {
  std::string axis = std::string(indent + 1, ' ') + "└";
  for (std::size_t c = 0; c < width; ++c) axis += "─";
  std::string ticks = std::string(indent + 2, ' ') + left;
  const std::size_t middle = indent + 2 + width / 2 - std::min(width / 2, name.size() / 2);
  ticks += std::string(middle > ticks.size() ? middle - ticks.size() : 1, ' ') + name;
  const std::size_t end = indent + 2 + width - std::min(width, right.size());
  ticks += std::string(end > ticks.size() ? end - ticks.size() : 1, ' ') + right;
  return {axis, ticks};
}

}  // namespace

std::vector<std::string> text_chart(const std::vector<ChartSeries>& series, const std::string& x_label, int columns,
                                    int rows, double y_top) {
  const std::size_t W = std::size_t(std::max(columns, 8)), H = std::size_t(std::max(rows, 2));
  double x0 = 0, x1 = 1, y0 = INFINITY, y1 = -INFINITY;
  const Columns means = column_means(series, W, x0, x1);
  for (const auto& m : means)
    for (double y : m)
      if (std::isfinite(y)) y0 = std::min(y0, y), y1 = std::max(y1, y);
  y1 = std::min(y1, y_top);
  if (!(y0 < y1)) y0 -= 0.5, y1 += 0.5;
  std::vector<std::vector<std::string>> grid(H, std::vector<std::string>(W, " "));
  for (std::size_t k = 0; k < series.size(); ++k)  // a later series over an earlier one
    for (std::size_t c = 0; c < W; ++c) {
      if (!std::isfinite(means[k][c])) continue;
      const double y = std::clamp(means[k][c], y0, y1);
      grid[std::size_t(std::lround((y1 - y) / (y1 - y0) * double(H - 1)))][c] = series[k].mark;  // row 0: the top
    }
  const std::string top = number(y1, "%.2f"), bottom = number(y0, "%.2f");
  const std::size_t label = std::max(top.size(), bottom.size());
  std::vector<std::string> out;
  for (std::size_t row = 0; row < H; ++row) {
    const bool end = row == 0 || row + 1 == H;
    std::string line = right_aligned(end ? (row == 0 ? top : bottom) : "", label) + (end ? " ┤" : " │");
    for (const std::string& cell : grid[row]) line += cell;
    out.push_back(line.substr(0, line.find_last_not_of(' ') + 1));
  }
  for (std::string& line : x_axis(label, W, number(x0, "%g"), x_label, number(x1, "%g"))) out.push_back(line);
  std::string legend = std::string(label + 2, ' ');
  for (const ChartSeries& s : series) legend += s.mark + " " + s.name + "   ";
  out.push_back(legend.substr(0, legend.find_last_not_of(' ') + 1));
  return out;
}

}  // namespace dtl
