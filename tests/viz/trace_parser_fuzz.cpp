// libFuzzer target: the trace parser must answer any input with a TraceData or a
// dtl::Error, never a crash, a hang or undefined behaviour (built with ASan + UBSan); what
// it accepts then goes through the indexes the views use (index_trace), as in the app,
// the memory view's per-phase picture (memory_by_phase, with its formula parsing), and the
// pipeline view's model (each schedule's steps, the report's bubble rows, the simulated
// timelines in the metadata).
// Built and run by tests/viz/fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/error.h"
#include "viz/model/memory_model.h"
#include "viz/model/trace_index.h"
#include "viz/views/pipeline/pipeline_model.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const dtl::viz::TraceData t =
        dtl::viz::parse_chrome_trace(std::string_view(reinterpret_cast<const char*>(data), size));
    const dtl::viz::TraceIndex x = dtl::viz::index_trace(t);
    if (x.chunk_timeline.available()) (void)x.chunk_timeline.state_after(x.transfers, x.transfers.size() / 2);
    (void)dtl::viz::memory_by_phase(t).largest();
    const dtl::viz::PipelineRuns runs = dtl::viz::pipeline_runs(t);
    std::vector<std::string> order;
    for (const dtl::viz::PipelineRun& r : runs.runs) {
      (void)dtl::viz::pipeline_step(t, r).bubble;
      (void)dtl::viz::pipeline_step(t, r, r.steps.empty() ? 0 : r.steps.front().step).blocks.size();
      order.push_back(r.schedule);
    }
    (void)dtl::viz::report_bubbles(t).size();
    (void)dtl::viz::simulated_pipelines(t, order).runs.size();
  } catch (const dtl::Error&) {}
  return 0;
}
