// Files in and out, checked. Writing goes through AtomicFile (core/util/atomic_file.h): a
// temporary beside the target, fsync, rename, so a failure leaves the old file as it was,
// and the error names the path and the system's reason:
//   write_text_file("/dev/full", json, "--json")
//     throws dtl::Error("writing --json to '/dev/full' failed: No space left on device")
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace dtl {

// Replaces `path` with `text` atomically; `what` names the file for the message ("the trace", "--json").
void write_text_file(const std::string& path, std::string_view text, std::string_view what);

// An output path checked before the work that fills it (a run of minutes whose file cannot
// be written would lose its result): this process can create or append to it. A file that
// did not exist is removed again. UsageError naming `what` ("--trace", "--save") otherwise.
void require_writable_file(const std::string& path, std::string_view what);
// True when `path` is a regular file (false for a device, a pipe, or a path that does not exist).
bool is_regular_file(const std::string& path);
// An input path: a regular file (a device such as /dev/zero never ends, a pipe cannot be
// sized) of at most `max_bytes`; returns its size. UsageError naming `what` otherwise.
std::uintmax_t require_readable_file(const std::string& path, std::string_view what, std::uintmax_t max_bytes);

// A file a command names, for require_distinct_files.
struct NamedFile {
  std::string option;  // "--trace", "--save"
  std::string path;    // "" = not given
  bool written = false;
};
// Two outputs naming one file (the second would replace the first) or an output naming an
// input (the run would overwrite what it reads, `--load ck.st --trace ck.st`): UsageError
// naming both options, before any work. Devices (/dev/null) may be named twice.
void require_distinct_files(const std::vector<NamedFile>& files);

}  // namespace dtl
