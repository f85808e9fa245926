#include "viz/model/trace_data.h"

#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <filesystem>

#include "core/trace/binary_trace.h"

#include "core/error.h"

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

namespace {

constexpr double kMaxMicroseconds = 1e12;  // about 11 days: anything larger is corrupt
constexpr std::int64_t kMaxRanks = 65536;

[[noreturn]] void bad(std::size_t index, const std::string& why) {
  throw Error("trace event " + std::to_string(index) + ": " + why +
              "; the file is not a dtlab trace or is damaged (write it again with --trace)");
}

std::int64_t to_ns(double us, std::size_t index, const char* what) {
  if (!std::isfinite(us) || std::fabs(us) > kMaxMicroseconds) bad(index, std::string("'") + what + "' is out of range");
  return std::int64_t(std::llround(us * 1000.0));
}

EventKind kind_of(std::string_view cat, std::size_t index) {
  if (cat == "compute") return EventKind::compute;
  if (cat == "send") return EventKind::send;
  if (cat == "recv") return EventKind::recv;
  if (cat == "collective") return EventKind::collective;
  if (cat == "phase") return EventKind::phase;
  bad(index, "unknown category '" + std::string(cat) + "'");
}

// Optional integer argument with bounds; missing → fallback.
std::int64_t arg_int(simdjson::dom::object args, const char* key, std::int64_t fallback, std::int64_t lo, std::int64_t hi,
                     std::size_t index) {
  simdjson::dom::element v;
  if (args[key].get(v)) return fallback;
  std::int64_t i = 0;
  if (v.is_int64()) i = v.get_int64().value();
  else if (v.is_uint64()) bad(index, std::string("'") + key + "' is too large");
  else if (v.is_double()) {
    const double d = v.get_double().value();
    if (!std::isfinite(d) || d < double(lo) || d > double(hi)) bad(index, std::string("'") + key + "' is out of range");
    i = std::int64_t(d);
  } else {
    bad(index, std::string("'") + key + "' is not a number");
  }
  if (i < lo || i > hi) bad(index, std::string("'") + key + "' is out of range");
  return i;
}

double number(simdjson::dom::element v, std::size_t index, const char* key) {
  double d = 0;
  if (v.is_double()) d = v.get_double().value();
  else if (v.is_int64()) d = double(v.get_int64().value());
  else if (v.is_uint64()) d = double(v.get_uint64().value());
  else bad(index, std::string("'") + key + "' is not a number");
  return d;
}

}  // namespace

namespace {
TraceData parse_padded(const simdjson::padded_string& padded);
}

TraceData parse_chrome_trace(std::string_view json) { return parse_padded(simdjson::padded_string(json)); }

TraceData load_chrome_trace(const std::string& path) {
  simdjson::padded_string text;
  if (simdjson::padded_string::load(path).get(text))
    throw Error("cannot open the trace '" + path + "'; check the path (write one with dtlab run ... --trace FILE)");
  return parse_padded(text);  // one read of the file, no further copies
}

namespace {
TraceData parse_padded(const simdjson::padded_string& padded) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (auto err = parser.parse(padded).get(doc))
    throw Error(std::string("the trace is not valid JSON (") + simdjson::error_message(err) +
                "); was the file cut short? write it again with --trace");
  simdjson::dom::object root;
  if (doc.get(root)) throw Error("the trace is not a JSON object with \"traceEvents\"; is it a Chrome trace?");
  simdjson::dom::array list;
  if (root["traceEvents"].get(list)) throw Error("the trace has no \"traceEvents\" array; is it a Chrome trace?");

  TraceData t;
  t.labels.push_back("");
  std::map<std::string, std::uint16_t, std::less<>> label_ids;
  simdjson::dom::object other;
  if (!root["otherData"].get(other))
    for (auto [key, value] : other) {
      std::string_view s;
      if (!value.get(s)) t.meta[std::string(key)] = std::string(s);
    }
  std::int64_t max_rank = -1;
  std::size_t index = 0;
  for (simdjson::dom::element item : list) {
    simdjson::dom::object e;
    if (item.get(e)) bad(index, "is not an object");
    std::string_view ph;
    if (e["ph"].get(ph)) bad(index, "has no \"ph\" (phase) string");
    simdjson::dom::element pid_el;
    if (e["pid"].get(pid_el)) {
      if (ph == "M") {
        ++index;
        continue;
      }
      bad(index, "has no \"pid\"");
    }
    const double pid = number(pid_el, index, "pid");
    if (pid < 0 || pid >= double(kMaxRanks) || pid != std::floor(pid)) bad(index, "'pid' (the rank) is out of range");
    const int rank = int(pid);
    if (ph == "X") {
      Event ev;
      ev.rank = rank;
      simdjson::dom::element ts, dur, tid_el;
      if (e["ts"].get(ts)) bad(index, "has no \"ts\"");
      if (e["dur"].get(dur)) bad(index, "has no \"dur\"");
      ev.begin_ns = to_ns(number(ts, index, "ts"), index, "ts");
      const std::int64_t d = to_ns(number(dur, index, "dur"), index, "dur");
      if (d < 0) bad(index, "'dur' is negative");
      ev.end_ns = ev.begin_ns + d;
      double tid = 0;
      if (!e["tid"].get(tid_el)) tid = number(tid_el, index, "tid");
      if (tid < 0 || tid > 1e6) bad(index, "'tid' is out of range");
      ev.stream = std::uint8_t(std::min(1, int(tid) / 1000));
      std::string_view cat, name;
      if (e["cat"].get(cat)) bad(index, "has no \"cat\"");
      ev.kind = kind_of(cat, index);
      if (!e["name"].get(name) && ev.kind != EventKind::send && ev.kind != EventKind::recv) {
        auto it = label_ids.find(name);
        if (it == label_ids.end()) {
          if (t.labels.size() >= 65535) bad(index, "too many distinct names");
          it = label_ids.emplace(std::string(name), std::uint16_t(t.labels.size())).first;
          t.labels.emplace_back(name);
        }
        ev.label = it->second;
      }
      simdjson::dom::object args;
      if (!e["args"].get(args)) {
        ev.bytes = std::uint64_t(arg_int(args, "bytes", 0, 0, std::int64_t(1) << 50, index));
        ev.peer = int(arg_int(args, "peer", -1, -1, kMaxRanks - 1, index));
        ev.tag = int(arg_int(args, "tag", 0, INT32_MIN, INT32_MAX, index));
        ev.step = int(arg_int(args, "step", -1, -1, INT32_MAX, index));
        ev.chunk = int(arg_int(args, "chunk", -1, -1, 32767, index));
        ev.chunk_count = std::int16_t(arg_int(args, "chunk_count", 0, 0, 32767, index));
        ev.micro_batch = std::int16_t(arg_int(args, "micro_batch", -1, -1, 32767, index));
        ev.flow_id = std::uint64_t(arg_int(args, "flow", 0, 0, INT64_MAX, index));
        ev.flags = arg_int(args, "reduce", 0, 0, 1, index) ? kFlagReduce : 0;
      }
      t.events.push_back(ev);
      max_rank = std::max<std::int64_t>(max_rank, rank);
    } else if (ph == "C") {
      MemorySample m;
      m.rank = rank;
      simdjson::dom::element ts;
      if (e["ts"].get(ts)) bad(index, "has no \"ts\"");
      m.t_ns = to_ns(number(ts, index, "ts"), index, "ts");
      simdjson::dom::object args;
      if (e["args"].get(args)) bad(index, "a counter without \"args\"");
      for (int tag = 0; tag < kNumMemTags; ++tag)
        m.bytes[std::size_t(tag)] = std::uint64_t(arg_int(args, mem_tag_name(MemTag(tag)), 0, 0, std::int64_t(1) << 50, index));
      t.memory.push_back(m);
      max_rank = std::max<std::int64_t>(max_rank, rank);
    } else if (ph == "M") {
      max_rank = std::max<std::int64_t>(max_rank, rank);
    }
    ++index;
  }
  t.ranks = int(max_rank + 1);
  const int declared = t.meta_int("world_size", t.ranks);
  if (declared > t.ranks && declared <= kMaxRanks) t.ranks = declared;
  std::stable_sort(t.events.begin(), t.events.end(), [](const Event& a, const Event& b) {
    return a.begin_ns != b.begin_ns ? a.begin_ns < b.begin_ns : a.rank < b.rank;
  });
  std::stable_sort(t.memory.begin(), t.memory.end(), [](const MemorySample& a, const MemorySample& b) { return a.t_ns < b.t_ns; });
  if (!t.events.empty()) {
    t.t_begin = t.events.front().begin_ns;
    t.t_end = t.t_begin;
    for (const Event& e : t.events) t.t_end = std::max(t.t_end, e.end_ns);
  }
  return t;
}
}  // namespace

TraceData from_events(int ranks, std::vector<std::string> labels, std::map<std::string, std::string> meta,
                      const std::vector<Event>& events) {
  TraceData t;
  t.ranks = ranks;
  t.labels = std::move(labels);
  t.meta = std::move(meta);
  std::vector<Event> sorted = events;
  std::stable_sort(sorted.begin(), sorted.end(), [](const Event& a, const Event& b) {
    return a.begin_ns != b.begin_ns ? a.begin_ns < b.begin_ns : a.rank < b.rank;
  });
  std::vector<MemoryByTag> current(static_cast<std::size_t>(ranks));
  t.events.reserve(sorted.size());
  for (const Event& e : sorted) {
    if (e.kind == EventKind::alloc || e.kind == EventKind::free) {
      MemoryByTag& mem = current[std::size_t(e.rank)];
      mem.apply(e);
      MemorySample m{e.rank, e.begin_ns, {}};
      for (int tag = 0; tag < kNumMemTags; ++tag) m.bytes[std::size_t(tag)] = mem.bytes[tag];
      t.memory.push_back(m);
      continue;
    }
    t.events.push_back(e);
  }
  if (!t.events.empty()) {
    t.t_begin = t.events.front().begin_ns;
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
  return from_events(trace.world_size(), trace.labels(), trace.meta(), all);
}

TraceData load_trace(const std::string& path) {
  namespace fs = std::filesystem;
  auto binary = [](const std::string& p) {
    BinaryTrace b = read_binary_trace(p);
    return from_events(b.world_size, std::move(b.labels), std::move(b.meta), b.events);
  };
  if (path.size() > 5 && path.compare(path.size() - 5, 5, ".dtlt") == 0) return binary(path);
  const std::string companion = path + ".dtlt";
  std::error_code ec;
  if (fs::exists(companion, ec) && fs::exists(path, ec) && fs::last_write_time(companion, ec) >= fs::last_write_time(path, ec))
    return binary(companion);
  return load_chrome_trace(path);
}

}  // namespace dtl::viz
