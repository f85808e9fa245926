#include "viz/model/trace_data.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "core/error.h"
#include "core/trace/trace_limits.h"

namespace dtl::viz {

int TraceData::meta_int(const std::string& key, int fallback) const {
  auto it = meta.find(key);
  if (it == meta.end()) return fallback;
  try {
    return std::stoi(it->second);
  } catch (...) {
    return fallback;
  }
}

int meta_count(const TraceData& t, const char* key, int fallback, int lo, int limit, const char* unit) {
  auto it = t.meta.find(key);
  if (it == t.meta.end()) return fallback;
  char* end = nullptr;
  const long long v = std::strtoll(it->second.c_str(), &end, 10);
  if (it->second.empty() || *end != '\0' || v < lo || v > limit)
    throw Error("the trace's metadata \"" + std::string(key) + "\" is '" + it->second.substr(0, 32) + "', not between " +
                std::to_string(lo) + " and " +
                std::to_string(limit) + " " + unit + " (the limit); the file is damaged or not written by dtlab");
  return int(v);
}

TraceData from_events(int ranks, std::vector<std::string> labels, std::map<std::string, std::string> meta,
                      std::vector<Event> events) {
  TraceData t;
  t.ranks = ranks;
  t.labels = std::move(labels);
  t.meta = std::move(meta);
  // Sorted in place and compacted: the events are the largest thing a trace holds, so
  // they are never copied (a 512-rank trace has 4.2M of them, 268 MB).
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return a.begin_ns != b.begin_ns ? a.begin_ns < b.begin_ns : a.rank < b.rank;
  });
  std::vector<MemoryByTag> current(static_cast<std::size_t>(std::max(0, ranks)));
  std::size_t kept = 0;
  for (const Event& e : events) {
    if (e.kind == EventKind::alloc || e.kind == EventKind::free) {
      if (e.rank < 0 || e.rank >= ranks) continue;
      MemoryByTag& mem = current[std::size_t(e.rank)];
      mem.apply(e);
      MemorySample m{e.rank, e.begin_ns, {}};
      for (int tag = 0; tag < kNumMemTags; ++tag) m.bytes[std::size_t(tag)] = mem.bytes[tag];
      t.memory.push_back(m);
      continue;
    }
    events[kept++] = e;
  }
  events.resize(kept);
  t.events = std::move(events);
  if (!t.events.empty()) {
    t.t_begin = t.events.front().begin_ns;
    t.t_end = t.t_begin;
    for (const Event& e : t.events) t.t_end = std::max(t.t_end, e.end_ns);
  }
  return t;
}

TraceData from_trace(const Trace& trace) {
  std::vector<Event> all;
  for (int r = 0; r < trace.world_size(); ++r)
    for (int s = 0; s < Trace::kStreams; ++s) {
      const EventLog& log = trace.log(r, s);
      const std::size_t n = log.size();
      for (std::size_t i = 0; i < n; ++i) all.push_back(log[i]);
    }
  return from_events(trace.world_size(), trace.labels(), trace.meta(), std::move(all));
}

namespace {

TraceData from_binary(BinaryTrace b) {
  TraceData t = from_events(b.world_size, std::move(b.labels), std::move(b.meta), std::move(b.events));
  meta_count(t, "chunks", 1, 0, trace_limits::kMaxChunks, "chunks");  // 0: the lab has no chunk grid
  return t;
}

}  // namespace

TraceData load_trace(const std::string& path) {
  namespace fs = std::filesystem;
  if (path.size() > 5 && path.compare(path.size() - 5, 5, ".dtlt") == 0) return from_binary(read_binary_trace(path));
  const std::string companion = path + ".dtlt";
  std::error_code ec;
  if (fs::exists(companion, ec) && fs::exists(path, ec) && fs::last_write_time(companion, ec) >= fs::last_write_time(path, ec))
    return from_binary(read_binary_trace(companion));
  return load_chrome_trace(path);
}

}  // namespace dtl::viz
