#include "core/util/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace dtl {

namespace {

// PATH.tmp<pid>-<n>: the same folder (a rename never crosses file systems), and a name no
// other process or thread of this one uses (per-rank files are written at the same time).
std::string temporary_name(const std::string& path) {
  static std::atomic<unsigned> counter{0};
  return path + ".tmp" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

// A device or a pipe is written in place: renaming over it would replace it.
bool written_in_place(const std::string& path, bool& pipe) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  pipe = S_ISFIFO(st.st_mode);
  return S_ISCHR(st.st_mode) || pipe;
}

}  // namespace

void require_output_kind(const std::string& path, std::string_view what) {
  struct stat st {};
  if (path.empty() || ::stat(path.c_str(), &st) != 0) return;
  if (S_ISREG(st.st_mode) || S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) return;
  const char* kind = S_ISDIR(st.st_mode) ? "a folder" : "not a regular file";
  throw UsageError(std::string(what) + " '" + path + "' is " + kind + "; give the name of a file to write");
}

AtomicFile::AtomicFile(std::string path, std::string_view what) : path_(std::move(path)), what_(what) {
  require_output_kind(path_, what_);
  bool pipe = false;
  in_place_ = written_in_place(path_, pipe);
  tmp_ = in_place_ ? path_ : temporary_name(path_);
  // 0666 less the umask, as a file the user creates by hand; O_EXCL: never someone else's file.
  // A pipe is opened without waiting: with nobody reading it, open fails (ENXIO) at once
  // instead of blocking forever (/dev/stdout piped to a reader is the pipe that works).
  const int fd = !in_place_ ? ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666)
                 : pipe     ? ::open(tmp_.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC)
                            : ::open(tmp_.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0 && pipe && errno == ENXIO)
    throw UsageError(what_ + " '" + path_ + "' is a pipe that nobody reads; start its reader first, or give a file");
  if (fd < 0)
    throw Error(what_ + " '" + path_ + "' cannot be written (" + std::strerror(errno) +
                "); give a path in an existing folder you can write to");
  if (pipe) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);  // then writes wait for the reader as usual
  f_ = ::fdopen(fd, "wb");
  if (!f_) {
    const int err = errno;
    ::close(fd);
    fail(err);
  }
}

AtomicFile::~AtomicFile() {
  if (f_) std::fclose(f_);
  if (!in_place_ && !tmp_.empty()) ::unlink(tmp_.c_str());
}

void AtomicFile::fail(int err) {
  if (f_) std::fclose(f_);
  f_ = nullptr;
  if (!in_place_) ::unlink(tmp_.c_str());
  tmp_.clear();
  throw Error("writing " + what_ + " to '" + path_ + "' failed: " + std::strerror(err ? err : EIO) +
              (in_place_ ? "" : "; the file that was there is unchanged"));
}

void AtomicFile::write(const void* data, std::size_t n) {
  if (!f_) throw Error("writing " + what_ + " to '" + path_ + "' after it was finished or failed");
  errno = 0;
  if (n && std::fwrite(data, 1, n, f_) != n) fail(errno);
}

void AtomicFile::commit() {
  if (!f_) throw Error("writing " + what_ + " to '" + path_ + "' after it was finished or failed");
  // The data must be on disk before the rename makes it the file: after a power loss the
  // name would otherwise point at an empty file. (A device or a pipe has nothing to sync: EINVAL.)
  errno = 0;
  if (std::fflush(f_) != 0 || std::ferror(f_)) fail(errno);
  if (::fsync(::fileno(f_)) != 0 && !(in_place_ && (errno == EINVAL || errno == EROFS))) fail(errno);
  std::FILE* f = f_;
  f_ = nullptr;
  if (std::fclose(f) != 0) fail(errno);
  if (in_place_) return;
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) fail(errno);
  tmp_.clear();
}

void write_file_atomically(const std::string& path, std::string_view bytes, std::string_view what) {
  AtomicFile out(path, what);
  out.write(bytes);
  out.commit();
}

}  // namespace dtl
