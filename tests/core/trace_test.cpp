// The Chrome trace: parses as JSON, every send has its receive, spans nest per track.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "core/comm/chunking.h"
#include "core/error.h"
#include "core/trace/binary_trace.h"
#include "core/trace/chrome_writer.h"
#include "core/trace/chunk_state.h"
#include "core/trace/content_stamp.h"
#include "tests/test_util.h"

using namespace dtl;
using nlohmann::json;

namespace {
// Every rank exchanges with both neighbours, async and overlapping (non-nesting spans).
void overlapping_exchange(Comm& c) {
  const int P = c.size();
  std::vector<float> a(256, float(c.rank())), b(256), d(256);
  for (int round = 0; round < 3; ++round) {
    Request r1 = c.irecv(b.data(), 1024, mod(c.rank() - 1, P), round, {round, 0, 1});
    Request r2 = c.irecv(d.data(), 1024, mod(c.rank() + 1, P), 100 + round);
    Request s1 = c.isend(a.data(), 1024, mod(c.rank() + 1, P), round, {round, 0, 1});
    Request s2 = c.isend(a.data(), 1024, mod(c.rank() - 1, P), 100 + round);
    r2.wait();
    s1.wait();
    r1.wait();
    s2.wait();
  }
  double v = 1;
  c.all_reduce(&v, &v, 1, DType::f64, ReduceOp::sum);
}
}  // namespace

TEST(ChromeTrace, IsWellFormedAndJoinsEverySendToItsRecv) {
  Trace trace(4);
  trace.set_meta("lab", "test \"quoted\"");
  test::run_ranks(4, overlapping_exchange, &trace);
  const json j = json::parse(chrome_trace_json(trace));
  ASSERT_TRUE(j.contains("traceEvents"));
  EXPECT_EQ(j["otherData"]["lab"], "test \"quoted\"");
  std::map<std::uint64_t, int> flow_starts, flow_ends;
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> spans;  // (pid, tid) → [begin, end]
  int sends = 0, recvs = 0;
  for (const auto& e : j["traceEvents"]) {
    const std::string ph = e["ph"];
    if (ph == "s") ++flow_starts[e["id"].get<std::uint64_t>()];
    if (ph == "f") ++flow_ends[e["id"].get<std::uint64_t>()];
    if (ph == "X") {
      const double ts = e["ts"], dur = e["dur"];
      ASSERT_GE(dur, 0.0);
      spans[{e["pid"], e["tid"]}].push_back({ts, ts + dur});
      sends += e["cat"] == "send";
      recvs += e["cat"] == "recv";
    }
  }
  EXPECT_EQ(sends, 4 * 6);
  EXPECT_EQ(recvs, 4 * 6);
  EXPECT_EQ(flow_starts.size(), std::size_t(24));
  for (const auto& [id, n] : flow_starts) EXPECT_EQ(flow_ends[id], 1) << "flow " << id << " has no end";
  // Nesting: on every track, a span that starts inside another must end inside it.
  for (auto& [track, list] : spans) {
    std::sort(list.begin(), list.end(),
              [](auto& a, auto& b) { return a.first != b.first ? a.first < b.first : a.second > b.second; });
    std::vector<double> open;
    for (const auto& [b, e] : list) {
      while (!open.empty() && open.back() <= b) open.pop_back();
      ASSERT_TRUE(open.empty() || e <= open.back() + 1e-9)
          << "span [" << b << ", " << e << "] overlaps its parent on pid " << track.first << " tid " << track.second;
      open.push_back(e);
    }
  }
}

TEST(ChromeTrace, TimesBeforeTheEpochAreNegativeNumbers) {
  Trace trace(1);
  for (const std::int64_t ns : {-2818222LL, -500LL, -1000LL, 0LL, 1500LL}) {
    Event e;
    e.kind = EventKind::alloc;
    e.begin_ns = e.end_ns = ns;
    e.bytes = 64;
    trace.record(e);
  }
  const json j = json::parse(chrome_trace_json(trace));  // "-2818.-222" used to throw here
  std::vector<double> ts;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "C") ts.push_back(e["ts"]);
  ASSERT_EQ(ts.size(), std::size_t(5));
  EXPECT_DOUBLE_EQ(ts[0], -2818.222);
  EXPECT_DOUBLE_EQ(ts[1], -0.5);
  EXPECT_DOUBLE_EQ(ts[2], -1.0);
  EXPECT_DOUBLE_EQ(ts[3], 0.0);
  EXPECT_DOUBLE_EQ(ts[4], 1.5);
}

TEST(ChromeTrace, LanesSeparatePartialOverlaps) {
  std::vector<Event> spans(3);
  spans[0].begin_ns = 0, spans[0].end_ns = 10;
  spans[1].begin_ns = 2, spans[1].end_ns = 5;   // nests in 0
  spans[2].begin_ns = 4, spans[2].end_ns = 20;  // overlaps 0 and 1 partially
  const std::vector<int> lanes = assign_lanes(spans);
  EXPECT_EQ(lanes, (std::vector<int>{0, 0, 1}));
}

TEST(ChromeTrace, LanesStopAtTheCapAndTheLastOneIsShared) {
  std::vector<Event> spans(100);
  for (int i = 0; i < 100; ++i)
    spans[std::size_t(i)].begin_ns = i, spans[std::size_t(i)].end_ns = 100 + i;  // each overlaps all before
  const std::vector<int> lanes = assign_lanes(spans, 8);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(lanes[std::size_t(i)], std::min(i, 7)) << "span " << i;
}

TEST(ContentStamp, AnySplitGivesTheSameStampAndAnEditChangesIt) {
  std::string text;
  for (int i = 0; i < 5000; ++i) text += "{\"ph\":\"X\",\"ts\":" + std::to_string(i) + "},\n";
  const ContentStamp whole = stamp_of(text);
  EXPECT_EQ(whole.size, text.size());
  for (std::size_t block : {1, 3, 31, 32, 33, 4096}) {
    ContentHasher h;
    for (std::size_t at = 0; at < text.size(); at += block)
      h.update(text.data() + at, std::min(block, text.size() - at));
    EXPECT_EQ(h.finish(), whole) << "blocks of " << block;
  }
  for (std::size_t at : {std::size_t(0), text.size() / 2, text.size() - 1}) {  // one bit anywhere, the tail included
    std::string edited = text;
    edited[at] = char(edited[at] ^ 1);
    EXPECT_NE(stamp_of(edited).hash, whole.hash) << "a change at byte " << at << " kept the hash";
  }
  EXPECT_NE(stamp_of("").hash, stamp_of(std::string(1, '\0')).hash);
}

TEST(ChunkState, ReplaysReduceAndCopy) {
  ChunkState s(3, 3);
  Event e;
  e.kind = EventKind::recv;
  e.rank = 1, e.peer = 0, e.chunk = 2, e.chunk_count = 1, e.flags = kFlagReduce;
  s.apply(e);
  EXPECT_EQ(s.count(1, 2), 2);
  EXPECT_TRUE(s.holds(1, 2, 0));
  e.rank = 2, e.peer = 1, e.flags = 0;  // copy rank 1's chunk 2 to rank 2
  s.apply(e);
  EXPECT_EQ(s.count(2, 2), 2);
  EXPECT_FALSE(s.holds(2, 2, 2));
}

// Issue 14: a full disk fails only when the file's buffer is flushed, at close; the trace
// writers must check that too and name the path (the trace here fits in one buffer).
TEST(ChromeTrace, WritingToAFullDiskThrowsNamingThePath) {
  Trace t(2);
  test::run_ranks(2, overlapping_exchange, &t);
  for (const auto& [name, write] : std::vector<std::pair<std::string, std::function<void()>>>{
           {"chrome", [&] { write_chrome_trace(t, "/dev/full"); }},
           {"binary", [&] { write_binary_trace(t, "/dev/full", ContentStamp{}); }}}) {
    std::string what = "no error";
    try {
      write();
    } catch (const Error& e) { what = e.what(); }
    EXPECT_NE(what.find("'/dev/full'"), std::string::npos) << name << ": " << what;
    EXPECT_NE(what.find("No space left on device"), std::string::npos) << name << ": " << what;
  }
}
