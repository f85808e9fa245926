// Issue 14, the trace side: implausible traces are rejected naming the limit they break
// (core/trace/trace_limits.h), what the visualizer derives stays O(events) (the chunk
// picture's checkpoints, lanes), the JSON reader does not care where blocks end, and a
// .dtlt companion is used only while it matches its JSON byte for byte.
#include "core/trace/trace_limits.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "core/trace/binary_trace.h"
#include "tests/viz/child_process.h"
#include "tests/viz/trace_fixtures.h"
#include "tests/viz/trace_mutations.h"

using namespace dtl;
using namespace dtl::viz;
using namespace dtl::test;

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) { return e.what(); }
  return "(accepted)";
}

// A trace of one send span; `fields` overrides the defaults (simdjson keeps the first of
// duplicate keys, so the overrides come first).
std::string span(const std::string& fields) {
  return "{\"traceEvents\":[{" + fields + ",\"ph\":\"X\",\"cat\":\"send\",\"pid\":0,\"ts\":1,\"dur\":1}]}";
}

// Ring all-reduce receives on P ranks with one chunk per rank: 2(P-1) steps × P receives.
std::vector<Event> ring_receives(int P) {
  std::vector<Event> out;
  for (int step = 0; step < 2 * (P - 1); ++step)
    for (int r = 0; r < P; ++r) {
      Event e;
      e.kind = EventKind::recv;
      e.rank = r, e.peer = (r + P - 1) % P, e.chunk = (r - step - 1 + 2 * P) % P, e.chunk_count = 1, e.bytes = 128;
      e.flags = step < P - 1 ? kFlagReduce : 0;
      e.begin_ns = e.end_ns = std::int64_t(step) * 1000 + r;
      out.push_back(e);
    }
  return out;
}

// Every field, for comparing events and printing the difference (memcmp would also
// compare padding bytes).
std::string text(const Event& e) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "kind %d rank %d stream %d [%lld, %lld] bytes %llu flow %llu peer %d tag %d step %d chunk %d+%d mb %d "
                "label %d flags %d group %s/%d",
                int(e.kind), e.rank, int(e.stream), static_cast<long long>(e.begin_ns),
                static_cast<long long>(e.end_ns), static_cast<unsigned long long>(e.bytes),
                static_cast<unsigned long long>(e.flow_id), e.peer, e.tag, e.step, e.chunk, int(e.chunk_count),
                int(e.micro_batch), int(e.label), int(e.flags), group_axis_name(e.axis), int(e.group_rank));
  return buf;
}

}  // namespace

TEST(TraceLimits, ImplausibleTracesAreRejectedNamingTheLimit) {
  const std::pair<std::string, std::string> cases[] = {
      {span("\"pid\":65535"), "beyond the limit of 16384 ranks"},
      {span("\"args\":{\"peer\":70000}"), "allowed: -1..16383"},
      {span("\"args\":{\"bytes\":2251799813685248}"), "allowed: 0..1125899906842624"},
      {span("\"args\":{\"chunk\":40000}"), "allowed: -1..32767"},
      {span("\"ts\":2e12"), "the limit is 1e12 us"},
      {span("\"tid\":5e6"), "allowed: 0..1000000"},
      {"{\"otherData\":{\"world_size\":\"65536\"},\"traceEvents\":[]}", "not between 1 and 16384 ranks (the limit)"},
      {"{\"otherData\":{\"chunks\":\"99999\"},\"traceEvents\":[]}", "not between 0 and 32767 chunks (the limit)"},
      {"{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"" + std::string(2 << 20, 'x') + "\"}]}", "1048576 bytes (the limit"},
      // Values quoted in a message stay on its one line (the fuzz found a "\n" escape).
      {span("\"cat\":\"s\\nd\""), "unknown category 's?d'"},
      {"{\"otherData\":{\"world_size\":\"4\\n\"},\"traceEvents\":[]}", "is '4?', not between 1 and 16384"},
  };
  for (const auto& [json, expected] : cases) {
    const std::string message = error_of([&] { parse_chrome_trace(json); });
    EXPECT_NE(message.find(expected), std::string::npos)
        << "input: " << json.substr(0, 120) << "\nmessage: " << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

TEST(TraceLimits, BinaryCountsBeyondTheLimitAreRejectedBeforeAllocating) {
  TempFolder dir("viz_limits_binary");
  const std::string path = dir.file("t.json");
  write_lab_trace(path, 4, "ring", 256);
  std::string bytes = read_file(path + ".dtlt");
  const std::uint64_t huge = trace_limits::kMaxEvents + 1;
  std::memcpy(bytes.data() + dtlt_layout(bytes).event_count, &huge, 8);
  write_file(dir.file("huge.dtlt"), bytes);
  const ChildResult r = run_in_child([&] { return load_like_the_app(dir.file("huge.dtlt")); });
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_NE(r.message.find("event count 33554433 is beyond the limit of 33554432"), std::string::npos) << r.message;
}

// The user's report: "a trace with pid 65535 takes 6.5 GB". The largest accepted rank
// count now costs per-rank tables only: the chunk picture (ranks² × chunks bits) is off.
TEST(TraceLimits, LargestRankCountLoadsInLittleMemory) {
  TempFolder dir("viz_limits_ranks");
  const std::string path = dir.file("t.json");
  write_file(path,
             "{\"otherData\":{\"world_size\":\"16384\"},\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"recv\",\"pid\":16383,"
             "\"ts\":1,\"dur\":1,\"args\":{\"peer\":0,\"chunk\":0,\"chunk_count\":1}}]}");
  const ChildResult r = run_in_child([&] { return load_like_the_app(path); });
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_LT(r.max_rss_kb, 256 * 1024) << "peak " << r.max_rss_kb / 1024 << " MiB for one event on 16384 ranks";
  const TraceIndex x = index_trace(load_trace(path));
  EXPECT_FALSE(x.chunk_timeline.available());
  EXPECT_NE(x.chunk_timeline.why_unavailable().find("beyond the limit of 128 MiB"), std::string::npos);
}

// 512 ranks × 512 chunks is 16 MiB a picture; a checkpoint every 1024 of the 523k
// receives used to make that 8 GB.
TEST(ChunkTimeline, CheckpointsOfManyRanksFitTheirBudget) {
  const int P = 512;
  const std::vector<Event> transfers = ring_receives(P);
  const ChildResult r = run_in_child([&] {
    const ChunkTimeline t(transfers, P, P);
    return std::to_string(t.state_after(transfers, transfers.size()).count(0, 0));
  });
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(r.message, std::to_string(P)) << "after the all-reduce every chunk holds every rank's data";
  // + 128 MiB for what the forked child already holds: the test's own pages, the transfer
  // list, and shared libraries (cuBLAS when the build has CUDA). The defect was 8 GB.
  const std::uint64_t budget = trace_limits::kChunkCheckpointBytes + 3 * chunk_picture_bytes(P, P) + (128 << 20);
  EXPECT_LT(std::uint64_t(r.max_rss_kb) * 1024, budget) << "peak " << r.max_rss_kb / 1024 << " MiB";
}

TEST(ChunkTimeline, SparseCheckpointsGiveTheSamePictures) {
  const int P = 64;
  const std::vector<Event> transfers = ring_receives(P);
  const ChunkTimeline t(transfers, P, P);
  for (std::size_t k = 0; k <= transfers.size(); k += 997) {
    const ChunkState a = t.state_after(transfers, k), b = chunk_state_after(transfers, P, P, k);
    for (int r = 0; r < P; ++r)
      for (int c = 0; c < P; ++c)
        ASSERT_EQ(a.count(r, c), b.count(r, c)) << "k=" << k << " rank " << r << " chunk " << c;
  }
}

TEST(Lanes, StaggeredSpansShareTheLastLaneInsteadOfOneLaneEach) {
  const TraceData d = parse_chrome_trace(staggered_spans(20000));
  const std::vector<Track> tracks = layout_tracks(d);
  EXPECT_LE(tracks.size(), std::size_t(trace_limits::kMaxLanes));
  std::size_t events = 0;
  for (const Track& t : tracks) events += t.events.size();
  EXPECT_EQ(events, 20000u) << "every span is still on some lane";
}

TEST(JsonReader, BlockBoundariesDoNotMatter) {
  TempFolder dir("viz_limits_blocks");
  write_lab_trace(dir.file("t.json"), 4, "all", 256);
  const std::string json = read_file(dir.file("t.json"));
  const TraceData whole = parse_chrome_trace(json);
  for (std::size_t block : {1, 2, 7, 64, 4093}) {
    const TraceData d = parse_chrome_trace_in_blocks(json, block);
    ASSERT_EQ(d.events.size(), whole.events.size()) << "blocks of " << block;
    ASSERT_EQ(d.memory.size(), whole.memory.size()) << "blocks of " << block;
    EXPECT_EQ(d.meta, whole.meta) << "blocks of " << block;
    for (std::size_t i = 0; i < d.events.size(); ++i)
      ASSERT_EQ(text(d.events[i]), text(whole.events[i])) << "event " << i << ", blocks of " << block;
  }
}

// Defect 2: the companion was trusted by timestamp. An edit that keeps the JSON's size and
// mtime (or leaves the companion newer) must not be hidden by the stale companion.
TEST(Companion, AnEditedJsonIsReadEvenWhenItsCompanionLooksNewer) {
  namespace fs = std::filesystem;
  TempFolder dir("viz_limits_companion");
  const std::string path = dir.file("t.json");
  write_lab_trace(path, 4, "ring", 256);
  const std::string json = read_file(path);
  const std::size_t at = json.find("\"lab\":\"collectives\"");
  ASSERT_NE(at, std::string::npos);
  std::string edited = json;
  edited.replace(at, 19, "\"lab\":\"collectivez\"");  // same size
  const auto mtime = fs::last_write_time(path);
  write_file(path, edited);
  fs::last_write_time(path, mtime);                                      // same mtime as before the edit
  fs::last_write_time(path + ".dtlt", mtime + std::chrono::seconds(5));  // and the companion newer
  EXPECT_EQ(load_trace(path).meta.at("lab"), "collectivez") << "the stale companion was used";
  EXPECT_EQ(read_binary_stamp(path + ".dtlt"), stamp_of_file(path)) << "the companion was not rebuilt";
}

TEST(Companion, ARebuiltCompanionGivesWhatTheJsonGives) {
  TempFolder dir("viz_limits_rebuilt");
  const std::string path = dir.file("t.json");
  write_lab_trace(path, 4, "all", 256);
  write_file(path + ".dtlt", "stale");
  const TraceData from_json = load_trace(path);  // rebuilds the companion
  const TraceData from_companion = load_trace(path + ".dtlt");
  ASSERT_EQ(from_companion.events.size(), from_json.events.size());
  for (std::size_t i = 0; i < from_json.events.size(); ++i)
    ASSERT_EQ(text(from_companion.events[i]), text(from_json.events[i])) << "event " << i;
  ASSERT_EQ(from_companion.memory.size(), from_json.memory.size());
  for (std::size_t i = 0; i < from_json.memory.size(); ++i) {
    EXPECT_EQ(from_companion.memory[i].t_ns, from_json.memory[i].t_ns) << "sample " << i;
    EXPECT_EQ(from_companion.memory[i].bytes, from_json.memory[i].bytes) << "sample " << i;
  }
  EXPECT_EQ(from_companion.labels, from_json.labels);
  EXPECT_EQ(from_companion.ranks, from_json.ranks);
}

TEST(Companion, AMatchingCompanionIsUsed) {
  TempFolder dir("viz_limits_matching");
  const std::string path = dir.file("t.json");
  write_lab_trace(path, 4, "ring", 256);
  TraceData d = load_chrome_trace(path);
  d.meta["lab"] = "from the companion";  // distinguishable, stamped with the JSON as it is
  write_binary_trace(to_binary(d, stamp_of_file(path)), path + ".dtlt");
  EXPECT_EQ(load_trace(path).meta.at("lab"), "from the companion");
}
