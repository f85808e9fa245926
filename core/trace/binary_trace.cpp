#include "core/trace/binary_trace.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>

#include "core/error.h"
#include "core/util/files.h"

namespace dtl {

namespace {

constexpr char kMagic[8] = {'D', 'T', 'L', 'T', 'R', 'A', 'C', 'E'};
constexpr std::uint32_t kVersion = 1;
constexpr std::uint64_t kMaxStrings = 1 << 20, kMaxStringBytes = 1 << 24;

using File = std::unique_ptr<FILE, int (*)(FILE*)>;

void put(FILE* f, const void* p, std::size_t n, const std::string& path) {
  if (n && std::fwrite(p, 1, n, f) != n)
    throw Error("writing the trace to '" + path + "' failed: " + std::strerror(errno ? errno : EIO));
}
void put_string(FILE* f, const std::string& s, const std::string& path) {
  const std::uint64_t n = s.size();
  put(f, &n, sizeof n, path);
  put(f, s.data(), s.size(), path);
}

struct Reader {
  FILE* f;
  const std::string& path;
  std::uint64_t remaining;
  void get(void* p, std::size_t n) {
    if (n > remaining || (n && std::fread(p, 1, n, f) != n))
      throw Error("the binary trace '" + path + "' is truncated; write it again with dtlab run ... --trace");
    remaining -= n;
  }
  std::uint64_t count(std::uint64_t limit, const char* what) {
    std::uint64_t n = 0;
    get(&n, sizeof n);
    if (n > limit) throw Error("the binary trace '" + path + "' is damaged: " + what + " count " + std::to_string(n) + " is impossible");
    return n;
  }
  std::string string() {
    std::string s(count(kMaxStringBytes, "string length"), '\0');
    get(s.data(), s.size());
    return s;
  }
};

}  // namespace

void write_binary_trace(const Trace& trace, const std::string& path, const std::string& error) {
  File f(std::fopen(path.c_str(), "wb"), std::fclose);
  if (!f) throw Error("cannot write '" + path + "'; check that its folder exists and is writable");
  put(f.get(), kMagic, sizeof kMagic, path);
  const std::uint32_t header[2] = {kVersion, std::uint32_t(trace.world_size())};
  put(f.get(), header, sizeof header, path);
  const auto labels = trace.labels();
  std::uint64_t n = labels.size();
  put(f.get(), &n, sizeof n, path);
  for (const auto& l : labels) put_string(f.get(), l, path);
  auto meta = trace.meta();
  meta["world_size"] = std::to_string(trace.world_size());
  if (!error.empty()) meta["error"] = error;
  n = meta.size();
  put(f.get(), &n, sizeof n, path);
  for (const auto& [k, v] : meta) {
    put_string(f.get(), k, path);
    put_string(f.get(), v, path);
  }
  n = 0;
  for (int r = 0; r < trace.world_size(); ++r)
    for (int s = 0; s < Trace::kStreams; ++s) n += trace.log(r, s).size();
  put(f.get(), &n, sizeof n, path);
  for (int r = 0; r < trace.world_size(); ++r)
    for (int s = 0; s < Trace::kStreams; ++s) {
      const EventLog& log = trace.log(r, s);
      for (std::size_t i = 0; i < log.size(); ++i) put(f.get(), &log[i], sizeof(Event), path);
    }
  close_written_file(f.release(), path, "the trace");  // a full disk often fails only here
}

BinaryTrace read_binary_trace(const std::string& path) {
  File f(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!f) throw Error("cannot open '" + path + "'; check the path");
  std::fseek(f.get(), 0, SEEK_END);
  const long size = std::ftell(f.get());
  std::fseek(f.get(), 0, SEEK_SET);
  Reader in{f.get(), path, std::uint64_t(size < 0 ? 0 : size)};
  char magic[8];
  in.get(magic, sizeof magic);
  if (std::memcmp(magic, kMagic, sizeof kMagic) != 0) throw Error("'" + path + "' is not a dtlab binary trace");
  std::uint32_t header[2];
  in.get(header, sizeof header);
  if (header[0] != kVersion)
    throw Error("'" + path + "' is a binary trace of version " + std::to_string(header[0]) + "; this build reads version " +
                std::to_string(kVersion) + " (open the .json instead)");
  if (header[1] < 1 || header[1] > 65536) throw Error("the binary trace '" + path + "' is damaged: world size " + std::to_string(header[1]));
  BinaryTrace t;
  t.world_size = int(header[1]);
  for (std::uint64_t i = 0, n = in.count(kMaxStrings, "label"); i < n; ++i) t.labels.push_back(in.string());
  for (std::uint64_t i = 0, n = in.count(kMaxStrings, "metadata"); i < n; ++i) {
    std::string k = in.string();
    t.meta[k] = in.string();
  }
  const std::uint64_t n = in.count(in.remaining / sizeof(Event), "event");
  t.events.resize(n);
  in.get(t.events.data(), n * sizeof(Event));
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    const Event& e = t.events[i];
    if (e.rank < 0 || e.rank >= t.world_size || e.peer >= t.world_size || e.end_ns < e.begin_ns || e.stream >= Trace::kStreams ||
        std::uint8_t(e.kind) > std::uint8_t(EventKind::mark) || e.label >= t.labels.size())
      throw Error("the binary trace '" + path + "' is damaged at event " + std::to_string(i) + "; open the .json instead");
  }
  return t;
}

}  // namespace dtl
