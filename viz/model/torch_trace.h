// PyTorch profiler traces (torch.profiler's export_chrome_trace) as TraceData, so the
// timeline holds a real framework's run next to dtlab's: one file, or the per-rank files of
// one run together (a lane group per rank, clocks aligned as core/trace/run_breakdown.h
// says). core/trace/torch_profile.h reads each file and gives every span its role.
//
// Mapping: the rank is distributedInfo.rank, else the file's place in the run (a legacy
// file alone is rank 0). A thread or stream whose spans are all communication (gloo's
// workers, NCCL's stream) is the rank's communication lane, the others its main lane.
// Communication spans become collectives, operations compute, each outermost among the
// spans of its thread that are not containers; containers (record_function annotations,
// ProfilerStep#N) become marks at their start, named, so steps stay visible without
// their own time being drawn as work. The figures (--overlap, dtlab analyze) come from
// core/trace/run_breakdown.h, never from these events.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/trace/torch_profile.h"
#include "viz/model/trace_data.h"

namespace dtl::viz {

// Whether the start of a JSON file looks like torch.profiler's (torch_profile.h).
bool looks_like_torch_trace(std::string_view head);

// One trace; throws dtl::Error naming the event and what is wrong.
TraceData parse_torch_trace(std::string_view json);

// The ranks of one run, ordered and aligned by the run analysis (dtl::UsageError when the
// profiles cannot be one run).
TraceData torch_run_trace(std::vector<TorchProfile> profiles);

// Whether command-line arguments name a torch run to open together: several files, or a folder.
bool is_torch_run(const std::vector<std::string>& args);

// The files or folder of a torch run (torch_trace_files), read and aligned.
TraceData load_torch_run_trace(const std::vector<std::string>& args);

}  // namespace dtl::viz
