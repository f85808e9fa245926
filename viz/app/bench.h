// dtlab-viz --bench TRACE: how long a trace takes to load and what a timeline frame costs
// on the CPU at several zoom levels (median and p99), with ImGui running headless.
#pragma once

#include <string>

namespace dtl::viz {
int run_bench(const std::string& trace_path);
}
