// The compact companion of a Chrome trace: FILE.json.dtlt holds the same run as raw
// 64-byte events plus the label table and metadata, so the visualizer loads a million
// events in a fraction of a second instead of parsing hundreds of MB of JSON.
//
// Layout (host byte order): "DTLTRACE" u32 version u32 world_size, u64 size and u64 hash
// of the JSON it was written beside (its ContentStamp), u64 label count and
// length-prefixed labels each followed by its 12-byte Role (core/trace/vocab.h), u64 meta count and key/value strings,
// u64 event count, events. The stamp is what makes it safe to prefer the companion: an edited JSON no longer matches,
// and the reader goes back to the JSON (viz/model/trace_data.cpp).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/trace/content_stamp.h"
#include "core/trace/trace.h"

namespace dtl {

struct BinaryTrace {
  int world_size = 0;
  ContentStamp source;  // the JSON this companion describes
  std::vector<std::string> labels;
  std::vector<Role> roles;  // parallel to labels: what each stands for
  std::map<std::string, std::string> meta;
  std::vector<Event> events;  // every track's events, unsorted
};

// Both writers write PATH.tmp<pid> and rename it, so a reader never sees half a file (a
// path that is no regular file, such as /dev/full, is written in place).
void write_binary_trace(const Trace& trace, const std::string& path, const ContentStamp& source,
                        const std::string& error = "");
void write_binary_trace(const BinaryTrace& trace, const std::string& path);

// Throws dtl::Error naming what is wrong (bad magic, older version, truncated, a count or
// field beyond core/trace/trace_limits.h).
BinaryTrace read_binary_trace(const std::string& path);
// Only the header's stamp: cheap, for deciding whether the companion is current.
ContentStamp read_binary_stamp(const std::string& path);

}  // namespace dtl
