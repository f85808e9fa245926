// Layout math of the views, plain code with no window so tests can check it: ring
// positions, the time↔pixel axis, lanes per track, folding runs of sub-pixel events
// (Tracy's model: a frame costs what its pixels show, not what the trace holds), idle
// time, and the chunk picture at transfer k.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/trace/chunk_state.h"
#include "viz/model/trace_data.h"

namespace dtl::viz {

struct Vec2 {
  float x = 0, y = 0;
};

// Rank r on a circle, rank 0 at the top, going clockwise.
std::vector<Vec2> ring_positions(int ranks, Vec2 center, float radius);

struct TimeRange {
  std::int64_t begin = 0, end = 0;
};

// Stretches of time a timeline leaves out: a live stepped run's waits for the learner
// (seconds of thinking between sub-millisecond steps). Each becomes a thin break in the
// picture, and the axis counts the run's own time. Sorted, merged [begin, end) ranges.
class TimeCuts {
 public:
  TimeCuts() = default;
  explicit TimeCuts(std::vector<TimeRange> cuts);
  bool empty() const { return cuts_.empty(); }
  const std::vector<TimeRange>& ranges() const { return cuts_; }
  double compress(double t) const;  // t less the cut time before it (inside a cut: the cut's start)
  double expand(double c) const;    // the real time of compressed time c (at a break: the cut's start)

 private:
  std::vector<TimeRange> cuts_;
  std::vector<double> before_;  // cut time before cut i
};

// The visible time window mapped onto [x0, x0 + width] pixels, less any cuts.
struct TimeAxis {
  double t0 = 0, t1 = 1;  // ns: the real times at the window's edges
  float x0 = 0, width = 1;
  const TimeCuts* cuts = nullptr;  // left out of the picture (nullptr: none)
  double compress(double t) const { return cuts ? cuts->compress(t) : t; }
  double expand(double c) const { return cuts ? cuts->expand(c) : c; }
  float from_compressed(double c) const;  // x of compressed time c
  float to_x(double t) const { return from_compressed(compress(t)); }
  double to_t(float x) const;
  void zoom(double factor, float anchor_x);  // factor > 1 zooms in around anchor_x
  void pan(float dx_pixels);                 // drag right: see earlier times
};

// One horizontal track of the timeline: a lane of one stream of one rank.
struct Track {
  int rank = 0, stream = 0, lane = 0;
  std::vector<std::uint32_t> events;  // indices into TraceData::events, sorted by begin
  std::vector<std::int64_t> max_end;  // running max of end times (for cutting to a window)
};

// Spans grouped into tracks (rank-major, then stream, then lane); lanes keep spans nested,
// up to trace_limits::kMaxLanes per rank and stream.
std::vector<Track> layout_tracks(const TraceData& t);

// A box to draw: one event, or a folded run of `count` events narrower than a few pixels.
struct DrawBox {
  float x0 = 0, x1 = 0;
  std::uint32_t event = 0;  // first event of the box
  std::uint32_t count = 1;
};

// The boxes of one track inside the axis window. Runs of events narrower than min_px fold
// into one box; after a fold the scan jumps (binary search) to the next pixel, so the
// work is bounded by the track's width in pixels, not by its number of events.
std::vector<DrawBox> visible_boxes(const TraceData& t, const Track& track, const TimeAxis& axis, float min_px);

// Fraction of [t0, t1] in which `rank` runs no compute span on any stream: one definition
// of idle (issue 47) for the timeline's hatching, its "idle in view" and viz/model/step_idle.
// Communication is not work: exposed communication, a wait for a slower rank and a
// pipeline's bubble are idle. A plain pass over the trace: the reference BusyIndex is tested against.
double idle_fraction(const TraceData& t, int rank, std::int64_t t0, std::int64_t t1);

// Compute time per rank (compute spans on any stream, merged), indexed so the idle fraction
// of any window costs two binary searches instead of a pass over the trace.
class BusyIndex {
 public:
  BusyIndex() = default;
  explicit BusyIndex(const TraceData& t);
  double idle_fraction(int rank, std::int64_t t0, std::int64_t t1) const;
  // The idle stretches of `rank` inside [t0, t1] at least min_ns long (the timeline hatches
  // these: shorter ones are under a pixel), in order.
  std::vector<TimeRange> idle_gaps(int rank, std::int64_t t0, std::int64_t t1, std::int64_t min_ns) const;

 private:
  std::int64_t covered_until(int rank, std::int64_t t) const;
  std::vector<std::vector<std::int64_t>> begin_, end_, before_;  // per rank: merged intervals, busy time before each
};

// Chunk pictures at any transfer k without replaying from the start: checkpoints of the
// picture, then at most one interval of transfers applied. A picture is ranks x chunks x
// ranks bits (16 MiB for 512 ranks and 512 chunks), so checkpoints are spaced to fit
// trace_limits::kChunkCheckpointBytes (one every 1024 transfers when they are small):
// memory stays bounded whatever the number of transfers. Beyond kMaxChunkPictureBytes
// there is no picture at all (available() is false; bytes sent still work).
class ChunkTimeline {
 public:
  ChunkTimeline() = default;
  ChunkTimeline(const std::vector<Event>& transfers, int ranks, int chunks);
  bool available() const { return available_; }
  const std::string& why_unavailable() const { return why_; }
  std::size_t checkpoint_interval() const { return every_; }
  ChunkState state_after(const std::vector<Event>& transfers, std::size_t k) const;  // needs available()
  std::vector<double> bytes_sent_after(const std::vector<Event>& transfers, std::size_t k) const;

 private:
  std::size_t every_ = 1024;
  int ranks_ = 1, chunks_ = 1;
  bool available_ = true;
  std::string why_;
  std::vector<ChunkState> states_;         // after i·every_ transfers
  std::vector<std::vector<double>> sent_;  // bytes sent per rank after i·every_ transfers
};

// Bytes of one chunk picture of ranks x chunks.
std::uint64_t chunk_picture_bytes(int ranks, int chunks);

// A pair of ranks that exchanged data, and the first transfer between them (in landing
// order): the ring view draws the edges with first < cursor in one pass per frame.
struct Edge {
  std::size_t first = 0;
  int from = 0, to = 0;  // sender, receiver
};
std::vector<Edge> edges_in_order(const std::vector<Event>& transfers);

// The chunk picture after the first k transfers (receives in the order data landed).
ChunkState chunk_state_after(const std::vector<Event>& transfers, int ranks, int chunks, std::size_t k);

// Bytes each rank has sent within the first k transfers.
std::vector<double> bytes_sent_after(const std::vector<Event>& transfers, int ranks, std::size_t k);

}  // namespace dtl::viz
