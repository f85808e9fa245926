// A PyTorch profiler trace (torch.profiler's export_chrome_trace) as TraceData, so the
// timeline and the overlap figures (comm_overlap.h) hold a real framework's run next to
// dtlab's. Both of torch's layouts are read: the legacy one (a bare JSON array, pid "CPU
// functions", no categories; Debian's CPU build writes it) and Kineto's ({"traceEvents":
// [...], "distributedInfo": {"rank": r}}).
//
// Mapping: the rank is distributedInfo.rank, else each distinct pid in order of first
// appearance (a legacy file holds one process: rank 0). Spans whose names say
// communication (gloo:, nccl:, c10d::, or a collective's name) become collectives, the
// rest compute. Only outermost spans of each thread are kept (an aten::addmm inside
// DistributedDataParallel.forward is not counted twice). The thread with the most spans is
// the rank's main lane; every other thread (gloo's workers) its communication lane.
#pragma once

#include <string_view>

#include "viz/model/trace_data.h"

namespace dtl::viz {

// Whether the start of a JSON file looks like torch.profiler's (dtlab's traces are an
// object whose first key is "otherData" or "traceEvents" and carry no "schemaVersion").
bool looks_like_torch_trace(std::string_view head);

// Throws dtl::Error naming the event and what is wrong; bounded by trace_limits.h.
TraceData parse_torch_trace(std::string_view json);

}  // namespace dtl::viz
