// The one way dtlab and dtlab-viz write a file: into a temporary name in the same folder,
// then fsync and rename over the target. A full disk, a file-size limit or a crash half-way
// leaves the file that was there untouched (a checkpoint, a trace, a report); a reader sees
// the old file or the new one, never a torn one.
//
//   AtomicFile out("ck.st", "--save");      // writes ck.st.tmp<pid>-<n> beside it
//   out.write(bytes.data(), bytes.size());  // throws dtl::Error naming ck.st and the reason
//   out.commit();                           // flush, fsync, close, rename; else the temporary goes
//
// An existing character device (/dev/null, /dev/full) or pipe (/dev/stdout into `| jq`) is
// written in place: renaming over it would replace it; its failures are reported all the same.
// A pipe that nobody reads, a folder or a socket is refused (UsageError), never waited on.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>

namespace dtl {

class AtomicFile {
 public:
  // `what` names the file for messages ("the trace", "--save").
  AtomicFile(std::string path, std::string_view what);
  ~AtomicFile();  // not committed: the temporary is removed, the target untouched
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, std::size_t n);
  void write(std::string_view text) { write(text.data(), text.size()); }
  // Makes the written bytes the file's content; throws dtl::Error (and removes the temporary)
  // when the flush, fsync, close or rename fails.
  void commit();

 private:
  [[noreturn]] void fail(int err);
  std::string path_, what_, tmp_;
  std::FILE* f_ = nullptr;
  bool in_place_ = false;  // a character device: written directly
};

// Replaces `path` with `bytes` through an AtomicFile.
void write_file_atomically(const std::string& path, std::string_view bytes, std::string_view what);

// An output path that a writer would refuse (a folder, a socket), refused before
// the work that fills it: UsageError naming `what`. A path that does not exist is fine.
void require_output_kind(const std::string& path, std::string_view what);

}  // namespace dtl
