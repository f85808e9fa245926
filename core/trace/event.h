// dtl::Event: the one record that carries what happened on a rank to every consumer
// (the Chrome-trace writer, reports, the step gate, the visualizer).
//
// It is a fixed-size POD so a rank can append one with a plain store into its own
// buffer: no lock, no allocation on the hot path.
#pragma once

#include <cstdint>
#include <type_traits>

namespace dtl {

enum class EventKind : std::uint8_t {
  compute,     // a span of local work (a reduction, a GEMM, ...)
  send,        // a point-to-point send, from post to completion
  recv,        // a point-to-point receive, from post to completion
  collective,  // a library collective (MPI_Allreduce, ncclAllReduce, the threads fast path)
  alloc,       // memory allocated (bytes, tag)
  free,        // memory released
  phase,       // a named span a lab marks: "reduce-scatter", "all-gather", "forward", ...
  mark,        // an instant: "step 3 begins"
};

const char* event_kind_name(EventKind k);  // "compute", "send", ... "mark" (the Chrome trace's cat)

// Streams a rank records on; each becomes one track (Chrome tid) per rank.
enum Stream : std::uint8_t { kStreamMain = 0, kStreamComm = 1 };

// Memory tags: what a buffer is for. The memory view stacks bars by tag. optimizer is
// AdamW's m and v; master the fp32 master weights of 16-bit parameters; gather ZeRO-3's
// all-gather buffers of full parameters; comm other buffers collectives use (a ZeRO-2
// gradient bucket being reduce-scattered). New tags go at the end: traces store the number.
// data: a batch's inputs and targets (and the loss gradient) on the rank's device.
enum class MemTag : std::uint8_t { param, grad, optimizer, activation, comm, other, master, gather, data };
inline constexpr int kNumMemTags = 9;
const char* mem_tag_name(MemTag t);

// The parallelism axis of the group an event's communicator belongs to (Topology names
// its dp, tp and pp groups), so timelines can group lanes by axis. none: the world, or a
// sub-communicator no Topology named.
enum class GroupAxis : std::uint8_t { none, dp, tp, pp };
inline constexpr int kNumGroupAxes = 4;
const char* group_axis_name(GroupAxis a);  // "none", "dp", "tp", "pp"

// Flags on a transfer.
enum EventFlags : std::uint8_t {
  kFlagReduce = 1,  // the receiver combined the data into its buffer (recv_reduce)
};

struct Event {
  std::int64_t begin_ns = 0;  // steady-clock ns since the trace epoch
  std::int64_t end_ns = 0;    // == begin_ns for instants
  std::uint64_t bytes = 0;    // payload bytes (transfers, collectives, alloc/free)
  std::uint64_t flow_id = 0;  // joins a send to its recv (0 = none)
  std::int32_t rank = 0;      // global rank that recorded it
  std::int32_t peer = -1;     // global rank of the other side of a transfer
  std::int32_t tag = 0;       // message tag, or MemTag for alloc/free
  std::int32_t step = -1;     // algorithm step the lab was in (-1 = none)
  std::int32_t chunk = -1;    // first chunk moved, in the lab's chunk grid
  std::int16_t chunk_count = 0;
  std::int16_t micro_batch = -1;
  std::uint16_t label = 0;  // index into the trace's label table ("ring all-reduce", ...)
  EventKind kind = EventKind::mark;
  std::uint8_t stream = kStreamMain;
  std::uint8_t flags = 0;
  GroupAxis axis = GroupAxis::none;  // of the communicator that recorded it
  std::int16_t group_rank = -1;      // rank within that sub-communicator (-1: the world, or no communicator)
  // No padding: every byte is a named field, so a .dtlt that stores Events raw is defined.
};
static_assert(sizeof(Event) == 64, "Event stays one cache line");
static_assert(std::is_trivially_copyable_v<Event> && std::has_unique_object_representations_v<Event>,
              "Event is POD with no padding bytes");

// One rank's memory replayed from its alloc/free events, by tag: the bytes allocated now,
// each tag's peak, the peak of the total and each tag's bytes at that moment. The one
// replay the trace writer's counters, the memory view and the labs' memory rows all use.
// (A free of more than a tag holds, from an allocation before the replay began, stops at 0.)
struct MemoryByTag {
  std::uint64_t bytes[kNumMemTags] = {};    // allocated now
  std::uint64_t peak[kNumMemTags] = {};     // each tag's most so far
  std::uint64_t total = 0, peak_total = 0;  // all tags: now, and the most so far
  std::uint64_t at_peak[kNumMemTags] = {};  // each tag's bytes when the total peaked
  void apply(const Event& e) {              // ignores events that are not alloc/free
    if (e.kind != EventKind::alloc && e.kind != EventKind::free) return;
    const int t = e.tag < 0 ? 0 : e.tag >= kNumMemTags ? kNumMemTags - 1 : e.tag;
    std::uint64_t& cur = bytes[t];
    const std::uint64_t change = e.kind == EventKind::alloc ? e.bytes : (e.bytes < cur ? e.bytes : cur);
    cur = e.kind == EventKind::alloc ? cur + change : cur - change;
    total = e.kind == EventKind::alloc ? total + change : total - change;
    if (cur > peak[t]) peak[t] = cur;
    if (total > peak_total) {
      peak_total = total;
      for (int i = 0; i < kNumMemTags; ++i) at_peak[i] = bytes[i];
    }
  }
};

}  // namespace dtl
