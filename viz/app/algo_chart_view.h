// The "which algorithm" window (dtlab-viz --which-algorithm BENCH.json): NCCL's predicted time
// per size for every algorithm × protocol (viz/model/algo_chart.h), log-scale axes, the model's
// winner per size ringed and named along the bottom, and the bench run's measured points as
// white dots. It holds only the chart the model made from the file; nothing of a lab.
#pragma once

#include "viz/model/algo_chart.h"

namespace dtl::viz {
void draw_algo_chart_window(const AlgoChart& chart);  // one frame, filling the display
}
