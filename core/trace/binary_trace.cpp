#include "core/trace/binary_trace.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>

#include "core/error.h"
#include "core/trace/trace_limits.h"
#include "core/util/atomic_file.h"

namespace dtl {

namespace {

namespace lim = trace_limits;

constexpr char kMagic[8] = {'D', 'T', 'L', 'T', 'R', 'A', 'C', 'E'};
// 2: the header carries the JSON's ContentStamp (version 1 companions are rebuilt).
// 3: Event's last three bytes are its group (axis, rank within it), no longer padding.
// 4: each label carries its typed Role.
// 5: the Role carries an MoE exchange (one more byte).
constexpr std::uint32_t kVersion = 5;
constexpr std::uint8_t kNoSchedule = 0xff;

using File = std::unique_ptr<FILE, int (*)(FILE*)>;

struct Writer {
  AtomicFile& out;
  void put(const void* p, std::size_t n) { out.write(p, n); }
  void put_u64(std::uint64_t n) { put(&n, sizeof n); }
  void put_string(const std::string& s) {
    put_u64(s.size());
    put(s.data(), s.size());
  }
  void role(const Role& r) {
    const std::uint8_t small[8] = {std::uint8_t(r.collective),
                                   std::uint8_t(r.algorithm),
                                   std::uint8_t(r.part),
                                   std::uint8_t(r.pass),
                                   r.schedule ? std::uint8_t(*r.schedule) : kNoSchedule,
                                   std::uint8_t(r.zero_stage),
                                   std::uint8_t(r.prefetch),
                                   std::uint8_t(r.exchange)};
    const std::int16_t wide[2] = {r.block, r.bucket};
    put(small, sizeof small);
    put(wide, sizeof wide);
  }
  void header(int world_size, const ContentStamp& source, const std::vector<std::string>& labels,
              const std::vector<Role>& roles, const std::map<std::string, std::string>& meta, std::uint64_t events) {
    put(kMagic, sizeof kMagic);
    const std::uint32_t head[2] = {kVersion, std::uint32_t(world_size)};
    put(head, sizeof head);
    put_u64(source.size);
    put_u64(source.hash);
    put_u64(labels.size());
    for (std::size_t i = 0; i < labels.size(); ++i) {
      put_string(labels[i]);
      role(i < roles.size() ? roles[i] : Role{});
    }
    put_u64(meta.size());
    for (const auto& [k, v] : meta) {
      put_string(k);
      put_string(v);
    }
    put_u64(events);
  }
};

// Writes through `body` into a temporary beside PATH, then renames (core/util/atomic_file.h):
// a viewer opening the trace at the same time reads the old companion or the new one.
template <class Body>
void write_atomically(const std::string& path, Body body) {
  AtomicFile out(path, "the binary trace");
  Writer w{out};
  body(w);
  out.commit();
}

struct Reader {
  FILE* f;
  const std::string& path;
  std::uint64_t remaining;
  [[noreturn]] void damaged(const std::string& what) const {
    throw Error("the binary trace '" + path + "' is damaged: " + what + "; open the .json instead");
  }
  void get(void* p, std::size_t n) {
    if (n > remaining || (n && std::fread(p, 1, n, f) != n))
      throw Error("the binary trace '" + path + "' is truncated; write it again with dtlab run ... --trace");
    remaining -= n;
  }
  std::uint64_t u64() {
    std::uint64_t n = 0;
    get(&n, sizeof n);
    return n;
  }
  std::uint64_t count(std::uint64_t limit, const char* what) {
    const std::uint64_t n = u64();
    if (n > limit)
      damaged(std::string(what) + " count " + std::to_string(n) + " is beyond the limit of " + std::to_string(limit));
    return n;
  }
  std::string string() {
    const std::uint64_t n = count(lim::kMaxStringBytes, "string length");
    if (n > remaining) get(nullptr, n);  // truncated: say so before allocating
    std::string s(n, '\0');
    get(s.data(), n);
    return s;
  }
  Role role() {
    std::uint8_t small[8];
    std::int16_t wide[2];
    get(small, sizeof small);
    get(wide, sizeof wide);
    if (small[0] > std::uint8_t(kLastCollectiveKind) || small[1] > std::uint8_t(AlgorithmKind::hierarchical) ||
        small[2] > std::uint8_t(RunPart::resume) || small[3] > std::uint8_t(Pass::recompute) ||
        (small[4] != kNoSchedule && small[4] > std::uint8_t(kLastScheduleKind)) ||
        small[7] > std::uint8_t(ExpertExchange::combine))
      damaged("a label's role names an unknown kind");
    const auto stage = std::int8_t(small[5]), prefetch = std::int8_t(small[6]);
    if (stage < -1 || stage > 3 || prefetch < -1 || prefetch > 64 || wide[0] < -1 || wide[1] < -1 || wide[1] > 16382)
      damaged("a label's role has a stage, prefetch depth, block or bucket out of range");
    Role r{.collective = CollectiveKind(small[0]),
           .algorithm = AlgorithmKind(small[1]),
           .part = RunPart(small[2]),
           .pass = Pass(small[3]),
           .zero_stage = stage,
           .prefetch = prefetch,
           .block = wide[0],
           .bucket = wide[1],
           .exchange = ExpertExchange(small[7])};
    if (small[4] != kNoSchedule) r.schedule = ScheduleKind(small[4]);
    return r;
  }
};

// Opens `path` and reads through the stamp; `in` is left at the label table.
BinaryTrace read_header(Reader& in) {
  char magic[8];
  in.get(magic, sizeof magic);
  if (std::memcmp(magic, kMagic, sizeof kMagic) != 0) throw Error("'" + in.path + "' is not a dtlab binary trace");
  std::uint32_t head[2];
  in.get(head, sizeof head);
  if (head[0] != kVersion)
    throw Error("'" + in.path + "' is a binary trace of version " + std::to_string(head[0]) +
                "; this build reads version " + std::to_string(kVersion) + " (open the .json instead)");
  if (head[1] < 1 || head[1] > std::uint32_t(lim::kMaxRanks))
    in.damaged("world size " + std::to_string(head[1]) + " is not between 1 and the limit of " +
               std::to_string(lim::kMaxRanks));
  BinaryTrace t;
  t.world_size = int(head[1]);
  t.source.size = in.u64();
  t.source.hash = in.u64();
  return t;
}

// What is wrong with an event, or nullptr. Every field a consumer indexes or subtracts
// with is bounded, so later code needs no checks of its own.
const char* event_problem(const Event& e, int world_size, std::size_t labels) {
  if (e.rank < 0 || e.rank >= world_size) return "its rank is outside the world";
  if (e.peer < -1 || e.peer >= world_size) return "its peer is outside the world";
  if (e.begin_ns < -lim::kMaxNanoseconds || e.end_ns > lim::kMaxNanoseconds)
    return "its time is beyond the limit of 1e12 us";
  if (e.end_ns < e.begin_ns) return "it ends before it begins";
  if (e.stream >= Trace::kStreams) return "its stream is unknown";
  if (std::uint8_t(e.kind) > std::uint8_t(EventKind::mark)) return "its kind is unknown";
  if (e.label >= labels) return "its label is not in the label table";
  if (e.bytes > lim::kMaxEventBytes) return "its byte count is beyond the limit of 2^50";
  if (e.chunk < -1 || e.chunk > lim::kMaxChunks || e.chunk_count < 0)
    return "its chunk or chunk count is outside 0..32767";
  if (std::uint8_t(e.axis) >= kNumGroupAxes) return "its group axis is unknown";
  if (e.group_rank < -1 || e.group_rank >= world_size) return "its rank within its group is outside the world";
  return nullptr;
}

}  // namespace

void write_binary_trace(const Trace& trace, const std::string& path, const ContentStamp& source,
                        const std::string& error) {
  auto meta = trace.meta();
  meta["world_size"] = std::to_string(trace.world_size());
  if (!error.empty()) meta["error"] = error;
  std::uint64_t n = 0;
  for (int r = 0; r < trace.world_size(); ++r)
    for (int s = 0; s < Trace::kStreams; ++s) n += trace.log(r, s).size();
  write_atomically(path, [&](Writer& w) {
    w.header(trace.world_size(), source, trace.labels(), trace.roles(), meta, n);
    for (int r = 0; r < trace.world_size(); ++r)
      for (int s = 0; s < Trace::kStreams; ++s) {
        const EventLog& log = trace.log(r, s);
        for (std::size_t i = 0; i < log.size(); ++i) w.put(&log[i], sizeof(Event));
      }
  });
}

void write_binary_trace(const BinaryTrace& t, const std::string& path) {
  write_atomically(path, [&](Writer& w) {
    w.header(t.world_size, t.source, t.labels, t.roles, t.meta, t.events.size());
    w.put(t.events.data(), t.events.size() * sizeof(Event));
  });
}

ContentStamp read_binary_stamp(const std::string& path) {
  File f(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!f) throw Error("cannot open '" + path + "'; check the path");
  Reader in{f.get(), path, 8 + 8 + 16};
  return read_header(in).source;
}

BinaryTrace read_binary_trace(const std::string& path) {
  File f(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!f) throw Error("cannot open '" + path + "'; check the path");
  std::fseek(f.get(), 0, SEEK_END);
  const long size = std::ftell(f.get());
  std::fseek(f.get(), 0, SEEK_SET);
  Reader in{f.get(), path, std::uint64_t(size < 0 ? 0 : size)};
  BinaryTrace t = read_header(in);
  for (std::uint64_t i = 0, n = in.count(lim::kMaxLabels, "label"); i < n; ++i) {
    t.labels.push_back(in.string());
    t.roles.push_back(in.role());
  }
  for (std::uint64_t i = 0, n = in.count(lim::kMaxMetaEntries, "metadata"); i < n; ++i) {
    std::string k = in.string();
    t.meta[k] = in.string();
  }
  const std::uint64_t n = in.count(lim::kMaxEvents, "event");
  if (n > in.remaining / sizeof(Event)) in.get(nullptr, n * sizeof(Event));  // truncated: no allocation first
  t.events.resize(n);
  in.get(t.events.data(), n * sizeof(Event));
  for (std::size_t i = 0; i < t.events.size(); ++i)
    if (const char* why = event_problem(t.events[i], t.world_size, t.labels.size()))
      in.damaged("event " + std::to_string(i) + ": " + why);
  return t;
}

}  // namespace dtl
