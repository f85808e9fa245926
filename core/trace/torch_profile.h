// One rank's torch.profiler Chrome trace (export_chrome_trace), read as typed spans for the
// run analysis (core/trace/run_breakdown.h), `dtlab analyze` and the viewer. Both of torch's
// layouts are read: the legacy one (a bare JSON array, pid "CPU functions", no categories,
// timestamps counted from the profiler's start; Debian's CPU build writes it) and Kineto's
// ({"traceEvents": [...], "distributedInfo": {"rank": r, "world_size": n}}, categories).
//
// Each span gets a role, so that no analysis has to read names again:
//   communication: a collective or its launch (gloo:*, nccl*, c10d::*, ProcessGroup*, or a
//                  collective's name such as all_reduce);
//   operation:     work a thread or stream ran: Kineto's cpu_op, kernel and memcpy spans;
//                  in the legacy layout, which has no categories, a namespaced operator
//                  ("aten::addmm", "autograd::engine::evaluate_function: AddmmBackward0");
//   container:     a span that only groups others: record_function annotations (Kineto's
//                  user_annotation; in the legacy layout any span whose name has no "ns::"),
//                  PyTorch's ProfilerStep#N and python_function spans. A container's own
//                  time is not work: a DDP rank waiting for its gradients' all-reduce sits
//                  inside the user's train_step span with no operator running.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dtl {

enum class ProfileRole : std::uint8_t { operation, communication, container };

struct ProfileSpan {
  std::int64_t begin_ns = 0, end_ns = 0;  // the trace's own clock
  int thread = 0;                         // dense index of its (pid, tid) within the file
  bool device = false;                    // a GPU stream's span (Kineto: kernel, gpu_memcpy, ...)
  ProfileRole role = ProfileRole::operation;
  std::uint32_t name = 0;  // index into TorchProfile::names
};

struct TorchProfile {
  std::string source;   // the file it came from (for messages)
  int rank = -1;        // distributedInfo.rank; -1 when the trace does not say (legacy layout)
  int world = 0;        // distributedInfo.world_size; 0 when unknown
  bool legacy = false;  // the bare-array layout
  int threads = 0;
  std::vector<std::string> names;
  std::vector<ProfileSpan> spans;  // sorted by begin, then longest first
};

// Whether the start of a JSON file looks like torch.profiler's (dtlab's own traces are an
// object whose first key is "otherData" or "traceEvents" and carry no "schemaVersion").
bool looks_like_torch_profile(std::string_view head);

// Throws dtl::Error saying which event is wrong; bounded by core/trace/trace_limits.h.
TorchProfile parse_torch_profile(std::string_view json);

// Reads a file; throws dtl::UsageError when it is missing or not a torch.profiler trace.
TorchProfile load_torch_profile(const std::string& path);

// The role a span's category (Kineto; empty in the legacy layout) and name give it.
ProfileRole profile_role(std::string_view category, std::string_view name);

}  // namespace dtl

namespace dtl {

// The traces that command-line arguments name: a file as given, a folder as its *.json files
// that look like torch.profiler traces (others, such as a run's notes, are skipped), in the
// order of the number in their names (rank2 before rank10). Throws dtl::UsageError for a
// missing path or a folder with no trace.
std::vector<std::string> torch_trace_files(const std::vector<std::string>& args);

// Every file load_torch_profile reads, in that order.
std::vector<TorchProfile> load_torch_run(const std::vector<std::string>& args);

}  // namespace dtl
