// The compact companion of a Chrome trace: FILE.json.dtlt holds the same run as raw
// 64-byte events plus the label table and metadata, so the visualizer loads a million
// events in a fraction of a second instead of parsing hundreds of MB of JSON.
//
// Layout (little-endian): "DTLTRACE" u32 version u32 world_size, u64 label count and
// length-prefixed labels, u64 meta count and key/value strings, u64 event count, events.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/trace/trace.h"

namespace dtl {

struct BinaryTrace {
  int world_size = 0;
  std::vector<std::string> labels;
  std::map<std::string, std::string> meta;
  std::vector<Event> events;  // every track's events, unsorted
};

void write_binary_trace(const Trace& trace, const std::string& path, const std::string& error = "");
// Throws dtl::Error naming what is wrong (bad magic, truncated, counts that do not fit).
BinaryTrace read_binary_trace(const std::string& path);

}  // namespace dtl
