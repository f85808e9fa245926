#include "core/util/files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/util/atomic_file.h"

namespace dtl {

void write_text_file(const std::string& path, std::string_view text, std::string_view what) {
  write_file_atomically(path, text, what);  // a temporary beside it, fsync, rename
}

void require_writable_file(const std::string& path, std::string_view what) {
  if (path.empty()) return;
  // The writer's own probe: its temporary can be created beside the file (and is removed
  // again), and the path is no folder, socket or pipe that nobody reads (never waited on).
  try {
    AtomicFile probe(path, what);
  } catch (const UsageError&) { throw; } catch (const Error& e) {
    throw UsageError(e.what());
  }
}

namespace {

// The same file: the same inode when both exist, else the same absolute path once "..",
// "." and symbolic links in the existing part are resolved.
bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  const bool a_exists = ::stat(a.c_str(), &sa) == 0, b_exists = ::stat(b.c_str(), &sb) == 0;
  if (a_exists && b_exists) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  if (a_exists != b_exists) return false;
  std::error_code ea, eb;
  // (absolute first: for a relative path none of which exists, weakly_canonical keeps "./X" and "X" apart)
  const auto ca = std::filesystem::weakly_canonical(std::filesystem::absolute(a), ea).lexically_normal();
  const auto cb = std::filesystem::weakly_canonical(std::filesystem::absolute(b), eb).lexically_normal();
  return !ea && !eb && ca == cb;
}

bool is_device(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode));
}

}  // namespace

void require_distinct_files(const std::vector<NamedFile>& files) {
  for (std::size_t i = 0; i < files.size(); ++i)
    for (std::size_t j = i + 1; j < files.size(); ++j) {
      const NamedFile &a = files[i], &b = files[j];
      if (a.path.empty() || b.path.empty() || !(a.written || b.written) || is_device(a.path)) continue;
      if (!same_file(a.path, b.path)) continue;
      if (a.written && b.written)
        throw UsageError(a.option + " '" + a.path + "' and " + b.option + " '" + b.path +
                         "' name the same file: one would replace the other; give each its own file");
      const NamedFile& out = a.written ? a : b;
      const NamedFile& in = a.written ? b : a;
      throw UsageError(out.option + " '" + out.path + "' names the file " + in.option +
                       " reads: writing it would destroy the input; give " + out.option + " another file");
    }
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
