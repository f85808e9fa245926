#include "viz/model/torch_trace.h"

#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "core/error.h"
#include "core/trace/trace_limits.h"

namespace dtl::viz {

namespace {

namespace lim = trace_limits;
using simdjson::dom::element;

struct Span {
  std::int64_t begin = 0, end = 0;
  int rank = 0, thread = 0;  // thread: dense index within the rank
  std::string name;
  bool comm = false;
};

[[noreturn]] void bad(std::size_t index, const std::string& why) {
  throw Error("torch profiler trace, event " + std::to_string(index) + ": " + why);
}

bool is_communication(std::string_view n) {
  for (std::string_view prefix : {"gloo:", "nccl:", "c10d::", "ProcessGroup"})
    if (n.substr(0, prefix.size()) == prefix) return true;
  for (std::string_view word :
       {"all_reduce", "allreduce", "all_gather", "allgather", "reduce_scatter", "broadcast", "barrier"})
    if (n.find(word) != std::string_view::npos) return true;
  return false;
}

// A pid or tid: a number or a string, as text (torch writes both).
std::string id_text(element v) {
  std::string_view s;
  if (!v.get(s)) return std::string(s);
  if (v.is_int64()) return std::to_string(v.get_int64().value());
  if (v.is_uint64()) return std::to_string(v.get_uint64().value());
  if (v.is_double()) return std::to_string(v.get_double().value());
  return "?";
}

std::int64_t micros_to_ns(element v, std::size_t index, const char* key) {
  double us = 0;
  if (v.is_double())
    us = v.get_double().value();
  else if (v.is_int64())
    us = double(v.get_int64().value());
  else if (v.is_uint64())
    us = double(v.get_uint64().value());
  else
    bad(index, std::string("'") + key + "' is not a number");
  if (!std::isfinite(us) || std::fabs(us) > lim::kMaxMicroseconds)
    bad(index, std::string("'") + key + "' is out of range");
  return std::int64_t(std::llround(us * 1000.0));
}

// Every "X" span, with ranks and threads numbered in order of first appearance.
std::vector<Span> read_spans(simdjson::dom::array events, int fixed_rank) {
  std::vector<Span> spans;
  std::map<std::string, int> ranks;
  std::map<std::pair<int, std::string>, int> threads;
  std::size_t index = 0;
  for (element item : events) {
    simdjson::dom::object e;
    std::string_view ph, name;
    element ts, dur, pid, tid;
    if (item.get(e)) bad(index, "is not an object");
    if (e["ph"].get(ph) || ph != "X") {
      ++index;
      continue;
    }
    if (e["ts"].get(ts) || e["dur"].get(dur)) bad(index, "a span without \"ts\" or \"dur\"");
    if (spans.size() >= lim::kMaxEvents) bad(index, "more spans than the limit of " + std::to_string(lim::kMaxEvents));
    Span s;
    s.begin = micros_to_ns(ts, index, "ts");
    const std::int64_t d = micros_to_ns(dur, index, "dur");
    if (d < 0) bad(index, "'dur' is negative");
    s.end = s.begin + d;
    const std::string pid_text = e["pid"].get(pid) ? "" : id_text(pid);
    s.rank = fixed_rank >= 0 ? fixed_rank : ranks.emplace(pid_text, int(ranks.size())).first->second;
    if (s.rank >= lim::kMaxRanks)
      bad(index, "more processes than the limit of " + std::to_string(lim::kMaxRanks) + " ranks");
    const std::string tid_text = e["tid"].get(tid) ? "" : id_text(tid);
    s.thread = threads.emplace(std::make_pair(s.rank, tid_text), int(threads.size())).first->second;
    if (!e["name"].get(name)) s.name = std::string(name.substr(0, 256));
    s.comm = is_communication(s.name);
    spans.push_back(std::move(s));
    ++index;
  }
  return spans;
}

// The outermost spans of each thread: sorted by (thread, begin, longest first), a span is
// kept when it starts at or after the end of the last one kept on its thread.
std::vector<Span> outermost(std::vector<Span> spans) {
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    if (a.thread != b.thread) return a.thread < b.thread;
    return a.begin != b.begin ? a.begin < b.begin : a.end > b.end;
  });
  std::vector<Span> out;
  for (Span& s : spans)
    if (out.empty() || out.back().thread != s.thread || s.begin >= out.back().end) out.push_back(std::move(s));
  return out;
}

// The busiest thread of each rank is its main lane.
std::map<int, int> main_threads(const std::vector<Span>& spans) {
  std::map<std::pair<int, int>, std::size_t> count;
  for (const Span& s : spans) ++count[{s.rank, s.thread}];
  std::map<int, std::pair<std::size_t, int>> best;  // rank → (count, thread)
  for (const auto& [key, n] : count)
    if (n > best[key.first].first) best[key.first] = {n, key.second};
  std::map<int, int> out;
  for (const auto& [rank, b] : best) out[rank] = b.second;
  return out;
}

TraceData to_trace_data(const std::vector<Span>& spans, int world) {
  TraceData t;
  t.labels.push_back("");
  std::map<std::string, std::uint16_t> ids;
  const std::map<int, int> main = main_threads(spans);
  for (const Span& s : spans) {
    Event ev;
    ev.rank = s.rank;
    ev.begin_ns = s.begin, ev.end_ns = s.end;
    ev.kind = s.comm ? EventKind::collective : EventKind::compute;
    ev.stream = main.at(s.rank) == s.thread ? kStreamMain : kStreamComm;
    auto it = ids.find(s.name);
    if (it == ids.end()) {
      if (t.labels.size() >= lim::kMaxLabels) throw Error("torch profiler trace: more distinct names than the limit");
      it = ids.emplace(s.name, std::uint16_t(t.labels.size())).first;
      t.labels.push_back(s.name);
    }
    ev.label = it->second;
    t.events.push_back(ev);
    t.ranks = std::max(t.ranks, s.rank + 1);
  }
  t.ranks = std::max(t.ranks, world);
  std::stable_sort(t.events.begin(), t.events.end(), [](const Event& a, const Event& b) {
    return a.begin_ns != b.begin_ns ? a.begin_ns < b.begin_ns : a.rank < b.rank;
  });
  if (!t.events.empty()) {
    t.t_begin = t.events.front().begin_ns;
    for (const Event& e : t.events) t.t_end = std::max(t.t_end, e.end_ns);
  }
  t.meta[meta_key_name(MetaKey::source)] = "torch.profiler";
  return t;
}

}  // namespace

bool looks_like_torch_trace(std::string_view head) {
  const std::size_t first = head.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && head[first] == '[') return true;  // the legacy layout
  return head.find("\"schemaVersion\"") != std::string_view::npos ||
         head.find("\"distributedInfo\"") != std::string_view::npos;
}

TraceData parse_torch_trace(std::string_view json) {
  simdjson::dom::parser parser;
  const simdjson::padded_string text(json);
  element doc;
  if (auto err = parser.parse(text).get(doc))
    throw Error(std::string("the torch profiler trace is not valid JSON (") + simdjson::error_message(err) + ")");
  simdjson::dom::array events;
  int rank = -1, world = 0;
  if (doc.get(events)) {
    if (doc["traceEvents"].get(events)) throw Error("the torch profiler trace has no \"traceEvents\" array");
    std::int64_t r = -1, w = 0;
    if (!doc["distributedInfo"]["rank"].get(r) && r >= 0 && r < lim::kMaxRanks) rank = int(r);
    if (!doc["distributedInfo"]["world_size"].get(w) && w > 0 && w <= lim::kMaxRanks) world = int(w);
  }
  return to_trace_data(outermost(read_spans(events, rank)), world);
}

}  // namespace dtl::viz
