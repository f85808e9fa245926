// Writing a whole file, checked: a full disk or a failing device shows up when the
// file's buffer is flushed, often only at close, so both the writes and the close are
// checked and the error names the path and the system's reason:
//   write_text_file("/dev/full", json, "--json")
//     throws dtl::Error("writing --json to '/dev/full' failed: No space left on device")
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace dtl {

// Replaces `path` with `text`; `what` names the file for the message ("the trace", "--json").
void write_text_file(const std::string& path, std::string_view text, std::string_view what);

// Closes `f` (opened for writing `path`) and throws dtl::Error, as above, when the close
// or an earlier write failed.
void close_written_file(std::FILE* f, const std::string& path, std::string_view what);

// An output path checked before the work that fills it (a run of minutes whose file cannot
// be written would lose its result): this process can create or append to it. A file that
// did not exist is removed again. UsageError naming `what` ("--trace", "--save") otherwise.
void require_writable_file(const std::string& path, std::string_view what);
// True when `path` is a regular file (false for a device, a pipe, or a path that does not exist).
bool is_regular_file(const std::string& path);
// An input path: a regular file (a device such as /dev/zero never ends, a pipe cannot be
// sized) of at most `max_bytes`; returns its size. UsageError naming `what` otherwise.
std::uintmax_t require_readable_file(const std::string& path, std::string_view what, std::uintmax_t max_bytes);

}  // namespace dtl
