// The terminal loss curve (loss_chart.h).
#include "labs/gpt/loss_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace dtl {

namespace {

struct Range2 {
  double x0 = 0, x1 = 1, y0 = 0, y1 = 1;
};

Range2 bounds(const std::vector<ChartSeries>& series) {
  Range2 r{INFINITY, -INFINITY, INFINITY, -INFINITY};
  for (const ChartSeries& s : series)
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      r.x0 = std::min(r.x0, s.x[i]), r.x1 = std::max(r.x1, s.x[i]);
      r.y0 = std::min(r.y0, s.y[i]), r.y1 = std::max(r.y1, s.y[i]);
    }
  if (!(r.x0 < r.x1)) r.x1 = r.x0 + 1;  // one point (or none): a range to place it in
  if (!(r.y0 < r.y1)) r.y0 -= 0.5, r.y1 += 0.5;
  return r;
}

std::string number(double v, const char* format) {
  char buf[32];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string right_aligned(const std::string& s, std::size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

}  // namespace

std::vector<std::string> text_chart(const std::vector<ChartSeries>& series, const std::string& x_label, int columns,
                                    int rows) {
  const Range2 r = bounds(series);
  const std::size_t W = std::size_t(std::max(columns, 8)), H = std::size_t(std::max(rows, 2));
  std::vector<std::vector<std::string>> grid(H, std::vector<std::string>(W, " "));
  for (const ChartSeries& s : series) {
    std::vector<double> sum(W, 0);
    std::vector<int> n(W, 0);
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      const auto c = std::size_t(std::lround((s.x[i] - r.x0) / (r.x1 - r.x0) * double(W - 1)));
      sum[c] += s.y[i], ++n[c];
    }
    for (std::size_t c = 0; c < W; ++c) {
      if (n[c] == 0) continue;
      const double y = sum[c] / n[c];
      const auto row = std::size_t(std::lround((r.y1 - y) / (r.y1 - r.y0) * double(H - 1)));  // row 0: the top
      grid[row][c] = s.mark;
    }
  }
  const std::string top = number(r.y1, "%.2f"), bottom = number(r.y0, "%.2f");
  const std::size_t label = std::max(top.size(), bottom.size());
  std::vector<std::string> out;
  for (std::size_t row = 0; row < H; ++row) {
    const bool end = row == 0 || row + 1 == H;
    std::string line = right_aligned(end ? (row == 0 ? top : bottom) : "", label) + (end ? " ┤" : " │");
    for (const std::string& cell : grid[row]) line += cell;
    out.push_back(line.substr(0, line.find_last_not_of(' ') + 1));
  }
  std::string axis = std::string(label + 1, ' ') + "└";
  for (std::size_t c = 0; c < W; ++c) axis += "─";
  out.push_back(axis);
  const std::string x0 = number(r.x0, "%g"), x1 = number(r.x1, "%g");
  std::string ticks = std::string(label + 2, ' ') + x0;
  const std::size_t middle = label + 2 + W / 2 - x_label.size() / 2;
  ticks += std::string(middle > ticks.size() ? middle - ticks.size() : 1, ' ') + x_label;
  const std::size_t right = label + 2 + W - x1.size();
  ticks += std::string(right > ticks.size() ? right - ticks.size() : 1, ' ') + x1;
  out.push_back(ticks);
  std::string legend = std::string(label + 2, ' ');
  for (const ChartSeries& s : series) legend += s.mark + " " + s.name + "   ";
  out.push_back(legend.substr(0, legend.find_last_not_of(' ') + 1));
  return out;
}

}  // namespace dtl
