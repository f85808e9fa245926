// The visualizer's plain-code parts: the trace parser (good and hostile input) and the
// layout math (ring positions, time axis, lanes, folding, idle time, chunk state).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/comm/threads_backend.h"
#include "core/error.h"
#include "core/trace/binary_trace.h"
#include "core/trace/chrome_writer.h"
#include "exercises/collectives.h"
#include "viz/model/layout.h"

using namespace dtl;
using namespace dtl::viz;

namespace {
// A real trace: the ring all-reduce on 4 thread ranks.
Trace& ring_trace() {
  static Trace trace(4);
  static bool done = false;
  if (!done) {
    trace.set_meta("chunks", "4");
    ThreadsOptions opt;
    opt.world_size = 4;
    opt.trace = &trace;
    run_threads(opt, [](Comm& c) {
      std::vector<float> v(64, float(c.rank()));
      ex::ring_all_reduce(c, {v.data(), v.size(), DType::f32}, ReduceOp::sum);
    });
    done = true;
  }
  return trace;
}
}  // namespace

TEST(TraceParser, RoundTripsWhatTheWriterWrote) {
  const Trace& trace = ring_trace();
  const TraceData d = parse_chrome_trace(chrome_trace_json(trace));
  EXPECT_EQ(d.ranks, 4);
  EXPECT_EQ(d.meta.at("chunks"), "4");
  const std::vector<Event> transfers = transfers_in_order(d.events);
  ASSERT_EQ(transfers.size(), 24u);  // 2(P-1) steps × P ranks
  const ChunkState s = chunk_state_after(transfers, 4, 4, transfers.size());
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) EXPECT_EQ(s.count(r, c), 4) << "rank " << r << " chunk " << c;
  for (const Event& e : transfers) EXPECT_NE(e.flow_id, 0u);
}

TEST(TraceParser, HostileInputGivesClearErrorsNotCrashes) {
  const char* cases[][2] = {
      {"", "not valid JSON"},
      {"{\"traceEvents\":[", "not valid JSON"},
      {"[1,2,3]", "not a JSON object"},
      {"{\"foo\":1}", "no \"traceEvents\""},
      {"{\"traceEvents\":[5]}", "is not an object"},
      {"{\"traceEvents\":[{\"ph\":\"X\",\"pid\":0,\"ts\":1}]}", "no \"dur\""},
      {"{\"traceEvents\":[{\"ph\":\"X\",\"pid\":0,\"ts\":\"soon\",\"dur\":1,\"cat\":\"send\"}]}",
       "'ts' is not a number"},
      {"{\"traceEvents\":[{\"ph\":\"X\",\"pid\":1e300,\"ts\":1,\"dur\":1,\"cat\":\"send\"}]}", "'pid'"},
      {"{\"traceEvents\":[{\"ph\":\"X\",\"pid\":-1,\"ts\":1,\"dur\":1,\"cat\":\"send\"}]}", "'pid'"},
      {"{\"traceEvents\":[{\"ph\":\"X\",\"pid\":0,\"ts\":1e300,\"dur\":1,\"cat\":\"send\"}]}", "out of range"},
      {"{\"traceEvents\":[{\"ph\":\"X\",\"pid\":0,\"ts\":1,\"dur\":-5,\"cat\":\"send\"}]}", "negative"},
      {"{\"traceEvents\":[{\"ph\":\"X\",\"pid\":0,\"ts\":1,\"dur\":1,\"cat\":\"teleport\"}]}", "unknown category"},
      {"{\"traceEvents\":[{\"ph\":\"X\",\"pid\":0,\"ts\":1,\"dur\":1,\"cat\":\"send\",\"args\":{\"chunk\":99999999}}]}",
       "'chunk'"},
      {"{\"traceEvents\":[{\"ph\":\"X\",\"pid\":0,\"ts\":1,\"dur\":1,\"cat\":\"send\",\"args\":{\"peer\":\"x\"}}]}",
       "'peer'"},
      {"{\"traceEvents\":[{\"ph\":\"C\",\"pid\":0,\"ts\":1}]}", "without \"args\""},
      // The block reader's own grammar (viz/model/json_splitter.h).
      {"{\"traceEvents\":[{\"ph\":\"M\",\"pid\":0},]}", "expected an event at byte 35"},
      {"{\"traceEvents\":[{\"ph\":\"M\",\"pid\":0} {}]}", "expected ',' or ']' after event 0"},
      {"{\"traceEvents\":[]} {}", "text after the end"},
      {"{\"traceEvents\" []}", "expected ':' after a key"},
      {"{\"traceEvents\":[],}", "expected a key"},
      {"{\"a\":1 \"traceEvents\":[]}", "expected ',' or '}'"},
      {"{\"a\":tru,\"traceEvents\":[]}", "outside \"traceEvents\""},
  };
  for (const auto& c : cases) {
    try {
      parse_chrome_trace(c[0]);
      ADD_FAILURE() << "accepted: " << c[0];
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(c[1]), std::string::npos) << "input " << c[0] << "\nmessage: " << e.what();
    }
  }
}

TEST(TraceParser, WhitespaceAndEmptyArraysAreFine) {
  EXPECT_EQ(parse_chrome_trace(" {\n \"traceEvents\" : [ ] ,\"otherData\":{\"lab\":\"x\"}}\n").meta.at("lab"), "x");
  EXPECT_TRUE(parse_chrome_trace("{\"traceEvents\":[]}").events.empty());
  EXPECT_EQ(parse_chrome_trace("{\"traceEvents\":[ {\"ph\":\"M\",\"pid\":2} ,\n\t{\"ph\":\"M\",\"pid\":0} ]}").ranks,
            3);
}

TEST(TraceParser, SendWithoutRecvAndMissingOptionalFieldsAreFine) {
  const TraceData d = parse_chrome_trace(
      "{\"traceEvents\":[{\"ph\":\"X\",\"pid\":2,\"ts\":1.5,\"dur\":2,\"cat\":\"send\",\"args\":{\"peer\":0,\"flow\":7}"
      "},"
      "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":3}]}");
  EXPECT_EQ(d.ranks, 4);
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].begin_ns, 1500);
  EXPECT_EQ(d.events[0].end_ns, 3500);
  EXPECT_TRUE(transfers_in_order(d.events).empty());
}

TEST(Layout, RingPositionsStartAtTopAndGoClockwise) {
  const auto p = ring_positions(4, {100, 100}, 50);
  EXPECT_NEAR(p[0].x, 100, 1e-4);
  EXPECT_NEAR(p[0].y, 50, 1e-4);   // top
  EXPECT_NEAR(p[1].x, 150, 1e-4);  // right: clockwise on screen (y grows downward)
  EXPECT_NEAR(p[2].y, 150, 1e-4);
}

TEST(Layout, TimeAxisMapsZoomsAroundTheAnchorAndPans) {
  TimeAxis a{0, 1000, 100, 500};
  EXPECT_FLOAT_EQ(a.to_x(500), 350);
  EXPECT_DOUBLE_EQ(a.to_t(350), 500);
  a.zoom(2, 350);  // twice as close around the middle
  EXPECT_DOUBLE_EQ(a.t0, 250);
  EXPECT_DOUBLE_EQ(a.t1, 750);
  a.pan(250);  // drag right by half the width: earlier times come into view
  EXPECT_DOUBLE_EQ(a.t0, 0);
}

TEST(Layout, FoldsSubPixelRunsAndCountsTheirEvents) {
  TraceData d;
  d.ranks = 1;
  for (int i = 0; i < 1000; ++i) {  // 1000 spans of 1 ns, 10 ns apart
    Event e;
    e.kind = EventKind::compute;
    e.begin_ns = i * 10;
    e.end_ns = i * 10 + 1;
    d.events.push_back(e);
  }
  Event wide;
  wide.kind = EventKind::compute;
  wide.begin_ns = 20000, wide.end_ns = 30000;
  d.events.push_back(wide);
  const auto tracks = layout_tracks(d);
  ASSERT_EQ(tracks.size(), 1u);
  const TimeAxis axis{0, 30000, 0, 300};  // 100 ns per pixel
  const auto boxes = visible_boxes(d, tracks[0], axis, 3);
  std::uint32_t total = 0;
  for (const auto& b : boxes) total += b.count;
  EXPECT_EQ(total, 1001u);            // every event accounted for
  EXPECT_LE(boxes.size(), 40u);       // ~10 µs of tiny spans = 100 px → about 34 boxes of 3 px
  EXPECT_EQ(boxes.back().count, 1u);  // the wide span stays itself
  EXPECT_NEAR(boxes.back().x1 - boxes.back().x0, 100, 1e-3);
}

// Issue 31 (8): 100k threads of a torch trace running at once share the last lane; each
// was a box of its own, drawn over the others (2.4 GB and 2 minutes for one screenshot).
// A box inside the one before it joins that one's count.
TEST(Layout, WideSpansInsideTheBoxBeforeJoinIt) {
  TraceData d;
  d.ranks = 1;
  for (int i = 0; i < 10000; ++i) {  // all at once, more than the lanes: they share the last
    Event e;
    e.kind = EventKind::compute;
    e.begin_ns = i % 3;  // starting within a pixel of each other
    e.end_ns = 10000 - i % 5;
    d.events.push_back(e);
  }
  const auto tracks = layout_tracks(d);
  const TimeAxis axis{0, 10000, 0, 300};
  std::size_t boxes = 0;
  std::uint32_t total = 0;
  for (const Track& t : tracks)
    for (const auto& b : visible_boxes(d, t, axis, 3)) ++boxes, total += b.count;
  EXPECT_EQ(total, 10000u);  // every span accounted for
  EXPECT_LE(boxes, tracks.size() * 3) << "a box per span: " << boxes;
}

TEST(Layout, LanesKeepOverlappingSpansApart) {
  TraceData d = parse_chrome_trace(chrome_trace_json(ring_trace()));
  for (const Track& t : layout_tracks(d)) {
    std::vector<std::int64_t> open;  // ends of the spans enclosing the current one
    for (auto i : t.events) {
      const Event& e = d.events[i];
      while (!open.empty() && open.back() <= e.begin_ns) open.pop_back();
      ASSERT_TRUE(open.empty() || e.end_ns <= open.back()) << "rank " << t.rank << " lane " << t.lane;
      open.push_back(e.end_ns);
    }
  }
}

TEST(Layout, IdleFractionAndBytesSent) {
  TraceData d;
  d.ranks = 2;
  Event a;
  a.kind = EventKind::compute, a.rank = 0, a.begin_ns = 0, a.end_ns = 40;
  Event b = a;
  b.begin_ns = 30, b.end_ns = 60;  // overlaps a: counted once
  d.events = {a, b};
  EXPECT_DOUBLE_EQ(idle_fraction(d, 0, 0, 100), 0.4);
  EXPECT_DOUBLE_EQ(idle_fraction(d, 1, 0, 100), 1.0);
  Event r;
  r.kind = EventKind::recv, r.rank = 1, r.peer = 0, r.bytes = 64;
  EXPECT_EQ(bytes_sent_after({r, r}, 2, 1), (std::vector<double>{64, 0}));
}

TEST(Layout, IndexesAgreeWithTheirPlainReferences) {
  TraceData d = parse_chrome_trace(chrome_trace_json(ring_trace()));
  const BusyIndex busy(d);
  const std::int64_t span = d.t_end - d.t_begin;
  double worst = 0;
  for (int r = 0; r < d.ranks; ++r)
    for (int w = 1; w <= 20; ++w) {  // windows of many sizes and offsets
      const std::int64_t t0 = d.t_begin + span * (w % 7) / 10, t1 = t0 + span * w / 20 + 1;
      worst = std::max(worst, std::fabs(busy.idle_fraction(r, t0, t1) - idle_fraction(d, r, t0, t1)));
    }
  EXPECT_LT(worst, 1e-12) << "largest difference " << worst;

  const std::vector<Event> transfers = transfers_in_order(d.events);
  const ChunkTimeline timeline(transfers, 4, 4);
  for (std::size_t k = 0; k <= transfers.size(); ++k) {
    const ChunkState a = timeline.state_after(transfers, k), b = chunk_state_after(transfers, 4, 4, k);
    for (int r = 0; r < 4; ++r)
      for (int c = 0; c < 4; ++c) ASSERT_EQ(a.count(r, c), b.count(r, c)) << "k=" << k;
    ASSERT_EQ(timeline.bytes_sent_after(transfers, k), bytes_sent_after(transfers, 4, k));
  }
}

TEST(BinaryTrace, RoundTripsAndRejectsDamage) {
  const std::string path = testing::TempDir() + "viz_roundtrip_" + std::to_string(::getpid()) + ".json";
  write_chrome_trace(ring_trace(), path);
  const TraceData from_json = load_chrome_trace(path), from_binary = load_trace(path);  // companion is used
  ASSERT_EQ(from_json.events.size(), from_binary.events.size());
  for (std::size_t i = 0; i < from_json.events.size(); ++i) {
    const Event &a = from_json.events[i], &b = from_binary.events[i];
    EXPECT_EQ(a.rank, b.rank);
    EXPECT_EQ(a.kind, b.kind);
    EXPECT_EQ(a.bytes, b.bytes);
    EXPECT_EQ(a.flow_id, b.flow_id);
    EXPECT_LE(std::llabs(a.begin_ns - b.begin_ns), 1);  // JSON keeps ns to the µs's third decimal
  }
  // Damage: a cut file and a foreign file give errors, not crashes.
  std::filesystem::resize_file(path + ".dtlt", 100);
  EXPECT_THROW(read_binary_trace(path + ".dtlt"), Error);
  {
    std::ofstream f(path + ".dtlt", std::ios::binary | std::ios::trunc);
    f << "not a trace at all";
  }
  EXPECT_THROW(read_binary_trace(path + ".dtlt"), Error);
}
