// Writing a whole file, checked: a full disk or a failing device shows up when the
// file's buffer is flushed, often only at close, so both the writes and the close are
// checked and the error names the path and the system's reason:
//   write_text_file("/dev/full", json, "--json")
//     throws dtl::Error("writing --json to '/dev/full' failed: No space left on device")
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace dtl {

// Replaces `path` with `text`; `what` names the file for the message ("the trace", "--json").
void write_text_file(const std::string& path, std::string_view text, std::string_view what);

// Closes `f` (opened for writing `path`) and throws dtl::Error, as above, when the close
// or an earlier write failed.
void close_written_file(std::FILE* f, const std::string& path, std::string_view what);

}  // namespace dtl
