#include "core/util/files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace dtl {

namespace {

[[noreturn]] void write_failed(const std::string& path, std::string_view what, int err) {
  throw Error("writing " + std::string(what) + " to '" + path + "' failed: " + std::strerror(err ? err : EIO));
}

}  // namespace

void close_written_file(std::FILE* f, const std::string& path, std::string_view what) {
  const bool failed_before = std::ferror(f) != 0;
  errno = 0;
  if (std::fclose(f) != 0 || failed_before) write_failed(path, what, errno);
}

void write_text_file(const std::string& path, std::string_view text, std::string_view what) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f)
    throw Error("cannot write " + std::string(what) + " to '" + path + "': " + std::strerror(errno) +
                "; check that its folder exists and is writable");
  if (std::fwrite(text.data(), 1, text.size(), f) != text.size()) {
    const int err = errno;
    std::fclose(f);
    write_failed(path, what, err);
  }
  close_written_file(f, path, what);
}

void require_writable_file(const std::string& path, std::string_view what) {
  if (path.empty()) return;
  const bool existed = ::access(path.c_str(), F_OK) == 0;
  std::FILE* probe = std::fopen(path.c_str(), "ab");
  if (!probe)
    throw UsageError(std::string(what) + " '" + path + "' cannot be written (" + std::strerror(errno) +
                     "); give a path in an existing folder you can write to");
  std::fclose(probe);
  if (!existed) std::remove(path.c_str());
}

bool is_regular_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::uintmax_t require_readable_file(const std::string& path, std::string_view what, std::uintmax_t max_bytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw UsageError("cannot open " + std::string(what) + " '" + path + "': " + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    throw UsageError(std::string(what) + " '" + path +
                     "' is not a regular file (a device or a pipe has no end to read "
                     "to); give a file");
  if (std::uintmax_t(st.st_size) > max_bytes)
    throw UsageError(std::string(what) + " '" + path + "' is " + std::to_string(st.st_size) + " bytes, more than the " +
                     std::to_string(max_bytes) + " it may be here");
  return std::uintmax_t(st.st_size);
}

}  // namespace dtl
