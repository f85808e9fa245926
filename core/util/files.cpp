#include "core/util/files.h"

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

}  // namespace dtl
