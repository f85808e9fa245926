// The Chrome trace reader: JsonSplitter hands out batches of "traceEvents" elements, and
// each element becomes an Event (an "X" span) or a MemorySample (a "C" counter). Every
// field is checked against core/trace/trace_limits.h, so what reaches the views is bounded.
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>

#include "core/error.h"
#include "core/trace/trace_limits.h"
#include "viz/model/json_splitter.h"
#include "viz/model/text_fit.h"
#include "viz/model/trace_data.h"

namespace dtl::viz {

namespace {

namespace lim = trace_limits;
using simdjson::dom::element;
using simdjson::dom::object;

constexpr std::uint64_t kBatchBytes = 1 << 20;  // simdjson's buffers stay near 14 MiB

[[noreturn]] void bad(std::uint64_t index, const std::string& why) {
  throw Error("trace event " + std::to_string(index) + ": " + why +
              "; the file is not a dtlab trace or is damaged (write it again with --trace)");
}

std::string show(double d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.15g", d);
  return buf;
}

std::string range(std::int64_t lo, std::int64_t hi) {
  return " (allowed: " + std::to_string(lo) + ".." + std::to_string(hi) + ")";
}

double number(element v, std::uint64_t index, const char* key) {
  if (v.is_double()) return v.get_double().value();
  if (v.is_int64()) return double(v.get_int64().value());
  if (v.is_uint64()) return double(v.get_uint64().value());
  bad(index, std::string("'") + key + "' is not a number");
}

std::int64_t to_ns(double us, std::uint64_t index, const char* what) {
  if (!std::isfinite(us) || std::fabs(us) > lim::kMaxMicroseconds)
    bad(index, std::string("'") + what + "' " + show(us) + " us is out of range (the limit is 1e12 us)");
  return std::int64_t(std::llround(us * 1000.0));
}

EventKind kind_of(std::string_view cat, std::uint64_t index) {
  if (cat == "compute") return EventKind::compute;
  if (cat == "send") return EventKind::send;
  if (cat == "recv") return EventKind::recv;
  if (cat == "collective") return EventKind::collective;
  if (cat == "phase") return EventKind::phase;
  bad(index, "unknown category '" + printable(cat) + "'");
}

// Optional integer argument within [lo, hi]; missing → fallback.
std::int64_t arg_int(object args, const char* key, std::int64_t fallback, std::int64_t lo, std::int64_t hi,
                     std::uint64_t index) {
  element v;
  if (args[key].get(v)) return fallback;
  const std::string name = std::string("'") + key + "'";
  if (v.is_int64()) {
    const std::int64_t i = v.get_int64().value();
    if (i < lo || i > hi) bad(index, name + " " + std::to_string(i) + " is out of range" + range(lo, hi));
    return i;
  }
  if (v.is_uint64()) bad(index, name + " is too large" + range(lo, hi));
  if (!v.is_double()) bad(index, name + " is not a number");
  const double d = v.get_double().value();
  if (!std::isfinite(d) || d < double(lo) || d > double(hi))
    bad(index, name + " " + show(d) + " is out of range" + range(lo, hi));
  return std::int64_t(d);
}

// Optional "axis": the group's parallelism axis (dp, tp, pp); missing → none.
GroupAxis axis_of(object args, std::uint64_t index) {
  std::string_view name;
  element v;
  if (args["axis"].get(v)) return GroupAxis::none;
  if (v.get(name)) bad(index, "'axis' is not a string");
  for (int a = 0; a < kNumGroupAxes; ++a)
    if (name == group_axis_name(GroupAxis(a))) return GroupAxis(a);
  bad(index, "unknown group axis '" + printable(name) + "' (allowed: none, dp, tp, pp)");
}

// An optional typed role member ("pass": "forward"), parsed by `parse` (vocab.h).
template <class Enum, class Parse>
std::optional<Enum> role_member(object args, const char* key, Parse parse, std::uint64_t index) {
  element v;
  if (args[key].get(v)) return std::nullopt;
  std::string_view name;
  if (v.get(name)) bad(index, std::string("'") + key + "' is not a string");
  const std::optional<Enum> e = parse(name);
  if (!e)
    bad(index, std::string("unknown '") + key + "' '" + printable(name) + "' (core/trace/vocab.h lists the names)");
  return e;
}

// The label's typed role from the span's args (core/trace/vocab.h's role_json_members).
Role role_of(object args, std::uint64_t index) {
  Role r;
  r.collective =
      role_member<CollectiveKind>(args, "collective", parse_collective_kind, index).value_or(CollectiveKind::none);
  r.algorithm =
      role_member<AlgorithmKind>(args, "algorithm", parse_algorithm_kind, index).value_or(AlgorithmKind::none);
  r.part = role_member<RunPart>(args, "part", parse_run_part, index).value_or(RunPart::none);
  r.pass = role_member<Pass>(args, "pass", parse_pass, index).value_or(Pass::none);
  r.schedule = role_member<ScheduleKind>(args, "schedule", parse_schedule_kind, index);
  r.zero_stage = std::int8_t(arg_int(args, "zero_stage", -1, 0, 3, index));
  r.prefetch = std::int8_t(arg_int(args, "prefetch", -1, 0, 64, index));
  r.block = std::int16_t(arg_int(args, "block", -1, 0, 32767, index));
  r.bucket = std::int16_t(arg_int(args, "bucket", -1, 0, 16382, index));
  r.exchange =
      role_member<ExpertExchange>(args, "exchange", parse_expert_exchange, index).value_or(ExpertExchange::none);
  return r;
}

int rank_of(element pid_el, std::uint64_t index) {
  const double pid = number(pid_el, index, "pid");
  if (!(pid >= 0 && pid < double(lim::kMaxRanks)) || pid != std::floor(pid))
    bad(index, "'pid' (the rank) " + show(pid) + " is out of range" + range(0, lim::kMaxRanks - 1) +
                   ", beyond the limit of " + std::to_string(lim::kMaxRanks) + " ranks");
  return int(pid);
}

// Collects events batch by batch; the splitter feeds it.
struct Collector {
  TraceData t;
  // name → role's code → label id: two lookups, however many roles a hostile trace gives a name.
  std::map<std::string, std::map<std::uint64_t, std::uint16_t>, std::less<>> label_ids;
  std::int64_t max_rank = -1;
  simdjson::dom::parser parser;

  void batch(const std::string& json, std::uint64_t first);
  void item(element item, std::uint64_t index);
  void span(object e, int rank, std::uint64_t index);
  void counter(object e, int rank, std::uint64_t index);
  void instant(object e, int rank, std::uint64_t index);
  std::uint16_t label_of(std::string_view name, const Role& role, std::uint64_t index);
  void count_one(std::uint64_t index) {
    if (t.events.size() + t.memory.size() >= lim::kMaxEvents)
      bad(index, "the trace holds more than " + std::to_string(lim::kMaxEvents) +
                     " events (the limit); trace fewer ranks or --iters");
  }
};

void Collector::batch(const std::string& json, std::uint64_t first) {
  element doc;
  if (auto err = parser.parse(json.data(), json.size(), false).get(doc))
    throw Error(std::string("the trace is not valid JSON (") + simdjson::error_message(err) + ", in the events from " +
                std::to_string(first) + " on); was the file cut short or edited? write it again with --trace");
  simdjson::dom::array events;
  if (doc.get(events)) throw Error("internal: a batch of trace events is not an array");
  std::uint64_t index = first;
  for (element e : events) item(e, index++);
}

void Collector::item(element item, std::uint64_t index) {
  object e;
  if (item.get(e)) bad(index, "is not an object");
  std::string_view ph;
  if (e["ph"].get(ph)) bad(index, "has no \"ph\" (phase) string");
  element pid_el;
  if (e["pid"].get(pid_el)) {
    if (ph == "M") return;
    bad(index, "has no \"pid\"");
  }
  const int rank = rank_of(pid_el, index);
  if (ph == "X")
    span(e, rank, index);
  else if (ph == "C")
    counter(e, rank, index);
  else if (ph == "i" || ph == "I")
    instant(e, rank, index);
  else if (ph != "M")
    return;  // flows ("s", "f"): the views derive them
  max_rank = std::max<std::int64_t>(max_rank, rank);
}

std::uint16_t Collector::label_of(std::string_view name, const Role& role, std::uint64_t index) {
  auto it = label_ids.find(name);
  if (it == label_ids.end()) it = label_ids.emplace(std::string(name), std::map<std::uint64_t, std::uint16_t>{}).first;
  const std::uint64_t code = role_code(role);
  if (const auto known = it->second.find(code); known != it->second.end()) return known->second;
  if (t.labels.size() >= lim::kMaxLabels)
    bad(index, "more than " + std::to_string(lim::kMaxLabels) + " distinct names (the limit)");
  const auto id = std::uint16_t(t.labels.size());
  it->second.emplace(code, id);
  t.labels.push_back(clip_text(name));  // words for people: drawn, so cut to what fits (text_fit.h)
  t.roles.push_back(role);
  return id;
}

void Collector::span(object e, int rank, std::uint64_t index) {
  count_one(index);
  Event ev;
  ev.rank = rank;
  element ts, dur, tid_el;
  if (e["ts"].get(ts)) bad(index, "has no \"ts\"");
  if (e["dur"].get(dur)) bad(index, "has no \"dur\"");
  ev.begin_ns = to_ns(number(ts, index, "ts"), index, "ts");
  const std::int64_t d = to_ns(number(dur, index, "dur"), index, "dur");
  if (d < 0) bad(index, "'dur' is negative");
  ev.end_ns = ev.begin_ns + d;
  double tid = 0;
  if (!e["tid"].get(tid_el)) tid = number(tid_el, index, "tid");
  if (!(tid >= 0 && tid <= lim::kMaxTid)) bad(index, "'tid' " + show(tid) + " is out of range (allowed: 0..1000000)");
  ev.stream = std::uint8_t(std::min(1, int(tid) / 1000));
  std::string_view cat, name;
  if (e["cat"].get(cat)) bad(index, "has no \"cat\"");
  ev.kind = kind_of(cat, index);
  const bool named = !e["name"].get(name) && ev.kind != EventKind::send && ev.kind != EventKind::recv;
  Role role;
  object args;
  if (!e["args"].get(args)) {
    role = role_of(args, index);
    ev.bytes = std::uint64_t(arg_int(args, "bytes", 0, 0, std::int64_t(lim::kMaxEventBytes), index));
    ev.peer = int(arg_int(args, "peer", -1, -1, lim::kMaxRanks - 1, index));
    ev.tag = int(arg_int(args, "tag", 0, INT32_MIN, INT32_MAX, index));
    ev.step = int(arg_int(args, "step", -1, -1, INT32_MAX, index));
    ev.chunk = int(arg_int(args, "chunk", -1, -1, lim::kMaxChunks, index));
    ev.chunk_count = std::int16_t(arg_int(args, "chunk_count", 0, 0, lim::kMaxChunks, index));
    ev.micro_batch = std::int16_t(arg_int(args, "micro_batch", -1, -1, 32767, index));
    ev.flow_id = std::uint64_t(arg_int(args, "flow", 0, 0, INT64_MAX, index));
    ev.flags = arg_int(args, "reduce", 0, 0, 1, index) ? kFlagReduce : 0;
    ev.axis = axis_of(args, index);
    ev.group_rank = std::int16_t(arg_int(args, "group_rank", -1, -1, lim::kMaxRanks - 1, index));
  }
  if (named) ev.label = label_of(name, role, index);
  t.events.push_back(ev);
  max_rank = std::max<std::int64_t>(max_rank, ev.peer);  // a peer is a rank of the world too
}

// An instant (a mark): where something begins, e.g. one run of a collective; its name and
// role say what. Instants of other tools without a name are kept, unnamed.
void Collector::instant(object e, int rank, std::uint64_t index) {
  count_one(index);
  Event ev;
  ev.rank = rank;
  ev.kind = EventKind::mark;
  element ts, tid_el;
  if (e["ts"].get(ts)) bad(index, "has no \"ts\"");
  ev.begin_ns = ev.end_ns = to_ns(number(ts, index, "ts"), index, "ts");
  double tid = 0;
  if (!e["tid"].get(tid_el)) tid = number(tid_el, index, "tid");
  if (!(tid >= 0 && tid <= lim::kMaxTid)) bad(index, "'tid' " + show(tid) + " is out of range (allowed: 0..1000000)");
  ev.stream = std::uint8_t(std::min(1, int(tid) / 1000));
  object args;
  const Role role = e["args"].get(args) ? Role{} : role_of(args, index);
  std::string_view name;
  if (!e["name"].get(name)) ev.label = label_of(name, role, index);
  t.events.push_back(ev);
}

void Collector::counter(object e, int rank, std::uint64_t index) {
  count_one(index);
  MemorySample m;
  m.rank = rank;
  element ts;
  if (e["ts"].get(ts)) bad(index, "has no \"ts\"");
  m.t_ns = to_ns(number(ts, index, "ts"), index, "ts");
  object args;
  if (e["args"].get(args)) bad(index, "a counter without \"args\"");
  for (int tag = 0; tag < kNumMemTags; ++tag)
    m.bytes[std::size_t(tag)] =
        std::uint64_t(arg_int(args, mem_tag_name(MemTag(tag)), 0, 0, std::int64_t(lim::kMaxEventBytes), index));
  t.memory.push_back(m);
}

void read_meta(TraceData& t, const std::string& other) {
  simdjson::dom::parser parser;
  element doc;
  if (auto err = parser.parse(other).get(doc))
    throw Error(std::string("the trace is not valid JSON (") + simdjson::error_message(err) +
                ", outside \"traceEvents\"); is it a Chrome trace written by dtlab?");
  object data;
  if (doc["otherData"].get(data)) return;
  for (auto [key, value] : data) {
    std::string_view s;
    if (!value.get(s)) t.meta[std::string(key)] = std::string(s);
  }
  if (t.meta.size() > lim::kMaxMetaEntries)
    throw Error("the trace's otherData has more than 65536 entries (the limit)");
}

TraceData finish(Collector& c, const std::string& other) {
  TraceData t = std::move(c.t);
  read_meta(t, other);
  t.ranks = int(c.max_rank + 1);
  t.ranks = std::max(t.ranks, meta_count(t, meta_key_name(MetaKey::world_size), t.ranks, 1, lim::kMaxRanks, "ranks"));
  meta_count(t, meta_key_name(MetaKey::chunks), 1, 0, lim::kMaxChunks, "chunks");  // 0: the lab has no chunk grid
  std::stable_sort(t.events.begin(), t.events.end(), [](const Event& a, const Event& b) {
    return a.begin_ns != b.begin_ns ? a.begin_ns < b.begin_ns : a.rank < b.rank;
  });
  std::stable_sort(t.memory.begin(), t.memory.end(),
                   [](const MemorySample& a, const MemorySample& b) { return a.t_ns < b.t_ns; });
  if (!t.events.empty()) {
    t.t_begin = t.events.front().begin_ns;
    t.t_end = t.t_begin;
    for (const Event& e : t.events) t.t_end = std::max(t.t_end, e.end_ns);
  }
  return t;
}

// Feeds `next` blocks (until it returns an empty view) through the splitter.
template <class NextBlock>
TraceData read(NextBlock next) {
  auto c = std::make_unique<Collector>();
  c->t.labels.push_back("");
  c->t.roles.push_back({});
  JsonSplitter splitter("traceEvents", {lim::kMaxJsonEventBytes, lim::kMaxJsonOtherBytes, kBatchBytes},
                        [&](const std::string& json, std::uint64_t first) { c->batch(json, first); });
  for (std::string_view block = next(); !block.empty(); block = next()) splitter.feed(block);
  const std::string other = splitter.finish();
  return finish(*c, other);
}

}  // namespace

TraceData parse_chrome_trace(std::string_view json) { return parse_chrome_trace_in_blocks(json, json.size()); }

TraceData parse_chrome_trace_in_blocks(std::string_view json, std::size_t block) {
  block = std::max<std::size_t>(block, 1);
  std::size_t at = 0;
  return read([&] {
    const std::string_view b = json.substr(at, block);
    at += b.size();
    return b;
  });
}

TraceData load_chrome_trace(const std::string& path, ContentStamp* stamp) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!f)
    throw Error("cannot open the trace '" + path + "'; check the path (write one with dtlab run ... --trace FILE)");
  std::vector<char> buf(std::size_t(4) << 20);  // read in blocks: a FIFO or a 10 GB file alike
  ContentHasher hasher;                         // stamped while read: the companion rebuilt from it matches these bytes
  TraceData t = read([&] {
    const std::size_t n = std::fread(buf.data(), 1, buf.size(), f.get());
    if (n == 0 && std::ferror(f.get())) throw Error("reading the trace '" + path + "' failed");
    if (stamp) hasher.update(buf.data(), n);
    return std::string_view(buf.data(), n);
  });
  if (stamp) *stamp = hasher.finish();
  return t;
}

}  // namespace dtl::viz
