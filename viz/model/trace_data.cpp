#include "viz/model/trace_data.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include "core/error.h"
#include "core/trace/trace_limits.h"
#include "core/util/files.h"
#include "viz/model/text_fit.h"
#include "viz/model/torch_trace.h"

namespace dtl::viz {

int TraceData::meta_int(const std::string& key, int fallback) const {
  auto it = meta.find(key);
  if (it == meta.end()) return fallback;
  try {
    return std::stoi(it->second);
  } catch (...) { return fallback; }
}

std::string printable(std::string_view text, std::size_t max_chars) {
  std::string out(text.substr(0, max_chars));
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return out;
}

int meta_count(const TraceData& t, const char* key, int fallback, int lo, int limit, const char* unit) {
  auto it = t.meta.find(key);
  if (it == t.meta.end()) return fallback;
  char* end = nullptr;
  const long long v = std::strtoll(it->second.c_str(), &end, 10);
  if (it->second.empty() || *end != '\0' || v < lo || v > limit)
    throw Error("the trace's metadata \"" + std::string(key) + "\" is '" + printable(it->second, 32) +
                "', not between " + std::to_string(lo) + " and " + std::to_string(limit) + " " + unit +
                " (the limit); the file is damaged or not written by dtlab");
  return int(v);
}

const std::string* TraceData::meta_of(MetaKey key) const {
  const auto it = meta.find(meta_key_name(key));
  return it == meta.end() ? nullptr : &it->second;
}

TraceData from_events(int ranks, std::vector<std::string> labels, std::vector<Role> roles,
                      std::map<std::string, std::string> meta, std::vector<Event> events) {
  TraceData t;
  t.ranks = ranks;
  t.labels = std::move(labels);
  for (std::string& l : t.labels)  // words for people, drawn: a .dtlt's as a JSON's (text_fit.h)
    if (l.size() > kMaxDrawnChars) l = clip_text(l);
  t.roles = std::move(roles);
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
  return from_events(trace.world_size(), trace.labels(), trace.roles(), trace.meta(), std::move(all));
}

BinaryTrace to_binary(const TraceData& t, const ContentStamp& source) {
  BinaryTrace b;
  b.world_size = t.ranks;
  b.source = source;
  b.labels = t.labels;
  b.roles = t.roles;
  b.meta = t.meta;
  b.events.reserve(t.events.size() + t.memory.size());
  b.events.assign(t.events.begin(), t.events.end());
  std::vector<std::array<std::uint64_t, kNumMemTags>> last(std::size_t(std::max(0, t.ranks)));
  for (const MemorySample& m : t.memory) {
    if (m.rank < 0 || m.rank >= t.ranks) continue;
    auto& was = last[std::size_t(m.rank)];
    Event e;
    e.rank = m.rank;
    e.begin_ns = e.end_ns = m.t_ns;
    const std::size_t before = b.events.size();
    for (EventKind kind : {EventKind::free, EventKind::alloc})  // frees first: no false peak in between
      for (int tag = 0; tag < kNumMemTags; ++tag) {
        const std::uint64_t now = m.bytes[std::size_t(tag)], old = was[std::size_t(tag)];
        if (kind == EventKind::free ? now >= old : now <= old) continue;
        e.kind = kind;
        e.tag = tag;
        e.bytes = kind == EventKind::free ? old - now : now - old;
        b.events.push_back(e);
      }
    if (b.events.size() == before) {  // nothing changed: keep the sample anyway
      e.kind = EventKind::alloc;
      e.tag = 0;
      e.bytes = 0;
      b.events.push_back(e);
    }
    was = m.bytes;
  }
  return b;
}

namespace {

TraceData from_binary(BinaryTrace b) {
  TraceData t =
      from_events(b.world_size, std::move(b.labels), std::move(b.roles), std::move(b.meta), std::move(b.events));
  meta_count(t, meta_key_name(MetaKey::chunks), 1, 0, trace_limits::kMaxChunks,
             "chunks");  // 0: the lab has no chunk grid
  return t;
}

// The companion, if it describes exactly the JSON at `json` (else nothing: it is stale,
// damaged, or of another version, and the caller parses the JSON instead).
std::optional<TraceData> current_companion(const std::string& json, const std::string& companion) {
  try {
    if (read_binary_stamp(companion) != stamp_of_file(json)) return std::nullopt;
    return from_binary(read_binary_trace(companion));
  } catch (const Error&) { return std::nullopt; }
}

}  // namespace

namespace {

// A torch.profiler trace (torch_trace.h), read whole: such files are small (one profiled
// window), and one over 1 GiB is refused rather than read.
std::optional<TraceData> load_if_torch_trace(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string head(4096, '\0');
  in.read(head.data(), std::streamsize(head.size()));
  head.resize(std::size_t(in.gcount()));
  if (!looks_like_torch_trace(head)) return std::nullopt;
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec || size > (std::uintmax_t(1) << 30))
    throw Error("the torch profiler trace '" + path + "' is larger than 1 GiB (the limit)");
  std::string text(size, '\0');
  in.clear();  // a file shorter than the head hit its end: clear eofbit/failbit, or seekg does nothing
  in.seekg(0);
  in.read(text.data(), std::streamsize(size));
  text.resize(std::size_t(in.gcount()));
  return parse_torch_trace(text);
}

}  // namespace

TraceData load_trace(const std::string& path) {
  namespace fs = std::filesystem;
  // In every mode (replay, --overlap, --bench): a pipe would block the first read forever, a
  // device never ends, a folder has no bytes. UsageError (exit 2) before anything is opened.
  require_readable_file(path, "the trace", UINTMAX_MAX);
  if (path.size() > 5 && path.compare(path.size() - 5, 5, ".dtlt") == 0) return from_binary(read_binary_trace(path));
  if (auto torch = load_if_torch_trace(path)) return std::move(*torch);
  const std::string companion = path + ".dtlt";
  std::error_code ec;
  const bool has_companion = fs::is_regular_file(companion, ec);
  if (has_companion)
    if (auto t = current_companion(path, companion)) return std::move(*t);
  ContentStamp stamp;
  TraceData t = load_chrome_trace(path, &stamp);
  if (has_companion) {
    try {
      write_binary_trace(to_binary(t, stamp), companion);
    } catch (const Error&) {  // read-only folder, disk full: the JSON is parsed again next time
    }
  }
  return t;
}

}  // namespace dtl::viz
