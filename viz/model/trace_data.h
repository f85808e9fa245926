// TraceData: what the visualizer draws, loaded from a dtlab Chrome trace or taken from a
// live run's Trace. It is the event store the views read; they keep no copy of lab state.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/trace/binary_trace.h"
#include "core/trace/content_stamp.h"
#include "core/trace/event.h"
#include "core/trace/trace.h"

namespace dtl::viz {

struct MemorySample {
  int rank = 0;
  std::int64_t t_ns = 0;
  std::array<std::uint64_t, kNumMemTags> bytes{};  // by MemTag
};

struct TraceData {
  int ranks = 0;
  std::vector<Event> events;                // spans and instants, sorted by (begin, rank)
  std::vector<std::string> labels;          // label id → text (0 = none): words for people
  std::vector<Role> roles;                  // label id → what it stands for (core/trace/vocab.h): what views read
  std::map<std::string, std::string> meta;  // lab, algo, chunks, report (JSON), error, ...
  std::vector<MemorySample> memory;         // sorted by time
  std::int64_t t_begin = 0, t_end = 0;

  std::string label(std::uint16_t id) const { return id < labels.size() ? labels[id] : std::string(); }
  const Role& role(std::uint16_t id) const {
    static const Role none;
    return id < roles.size() ? roles[id] : none;
  }
  const Role& role(const Event& e) const { return role(e.label); }
  // A metadata value, or nullptr.
  const std::string* meta_of(MetaKey key) const;
  int meta_int(const std::string& key, int fallback) const;
};

// Parses a trace written by dtlab (threads, MPI or merged). Throws dtl::Error with a
// message that names the problem and, where there is one, the event index. The text is
// read in blocks (viz/model/json_splitter.h), so memory follows the events, not the file,
// and every field is checked against core/trace/trace_limits.h.
TraceData parse_chrome_trace(std::string_view json);
// The same, fed `block` bytes at a time (tests check that block boundaries do not matter).
TraceData parse_chrome_trace_in_blocks(std::string_view json, std::size_t block);
// Reads the file in blocks (a FIFO works); `stamp`, if given, receives its ContentStamp.
TraceData load_chrome_trace(const std::string& path, ContentStamp* stamp = nullptr);

// Opens what the user named: a .dtlt binary trace, or a .json. A .json's .dtlt companion
// is used only when its header carries this JSON's size and hash; a stale, damaged or
// older companion is ignored and rewritten from the JSON (best effort: a read-only folder
// just means the JSON is parsed again next time).
TraceData load_trace(const std::string& path);

// A live run's events so far (the trace may still be growing).
TraceData from_trace(const Trace& trace);
// The same from raw events (a binary trace): memory events become samples.
TraceData from_events(int ranks, std::vector<std::string> labels, std::vector<Role> roles,
                      std::map<std::string, std::string> meta, std::vector<Event> events);
// Back to raw events, for writing a .dtlt: samples become the alloc/free events that
// from_events turns into the same samples.
BinaryTrace to_binary(const TraceData& t, const ContentStamp& source);

// Text from a trace, made fit for a one-line error message: at most max_chars, control
// characters (a JSON "\n" escape decodes to a real newline) shown as '?'.
std::string printable(std::string_view text, std::size_t max_chars = 64);

// A count in the metadata ("world_size", "chunks"): absent → fallback; otherwise it must
// be an integer in [lo, limit], or this throws a dtl::Error naming the key and the limit.
int meta_count(const TraceData& t, const char* key, int fallback, int lo, int limit, const char* unit);

}  // namespace dtl::viz
