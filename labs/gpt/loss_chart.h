// A loss curve for the terminal: a few rows of text, one mark per column, so a run's
// learning shows in the report without a plot window (dtlab-viz draws Report::plots).
//
//   4.58 ┤•
//        │ ••
//        │   ◆••••
//   1.95 ┤        •••◆•••••◆••••
//        └──────────────────────
//         0       step       300
#pragma once

#include <cmath>
#include <string>
#include <vector>

namespace dtl {

struct ChartSeries {
  std::string name;  // for the legend
  std::string mark;  // one character (UTF-8)
  std::vector<double> x, y;
};

// `rows` lines of `columns` marks between a y-axis and an x-axis, then the axis labels and
// a legend line. A column shows the mean y of each series' points in its x range; a later
// series draws over an earlier one. Every line is at most columns + 8 characters wide.
// The y axis ends at the data's largest value or at y_top, whichever is lower; values above
// are drawn on the top row (one early spike would otherwise flatten the whole curve).
std::vector<std::string> text_chart(const std::vector<ChartSeries>& series, const std::string& x_label, int columns,
                                    int rows, double y_top = INFINITY);

}  // namespace dtl
