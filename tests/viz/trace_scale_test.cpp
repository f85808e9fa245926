// Issue 14: a 512-rank trace opens in under 1 GiB. The test writes what
//   dtlab run collectives --ranks 512 --bytes 64K --iters 1 --trace t.json
// writes (1.2 GB of JSON: per rank 4 ring all-reduces of 2·511 steps, each a receive and a
// send with their flow events, a phase, 13 library collectives, 6 memory counters; sends
// overlap receives, so ranks get a second lane), without its .dtlt companion, and loads it
// the way the app does in a child process whose peak resident memory it checks. The load
// time is printed, not asserted (it depends on the machine).
#include <gtest/gtest.h>

#include <charconv>
#include <chrono>
#include <cstdio>

#include "tests/viz/child_process.h"
#include "tests/viz/trace_fixtures.h"

using namespace dtl;
using namespace dtl::test;

namespace {

constexpr int P = 512, kRounds = 4, kSteps = 2 * (P - 1);

// Appends text to a block that goes to the file when full (the 1.2 GB never sits in memory).
class Out {
 public:
  explicit Out(const std::string& path) : f_(std::fopen(path.c_str(), "wb")) { buf_.reserve(kBlock + 4096); }
  ~Out() {
    flush();
    if (f_) std::fclose(f_);
  }
  Out& operator<<(std::string_view s) {
    buf_.append(s);
    if (buf_.size() >= kBlock) flush();
    return *this;
  }
  Out& operator<<(long long v) {
    char tmp[24];
    return *this << std::string_view(tmp, std::size_t(std::to_chars(tmp, tmp + sizeof tmp, v).ptr - tmp));
  }
  Out& us(long long ns) {  // "12.345" µs, as the writer prints ns
    char tmp[32];
    const int n = std::snprintf(tmp, sizeof tmp, "%lld.%03lld", ns / 1000, ns % 1000);
    return *this << std::string_view(tmp, std::size_t(n));
  }
  bool ok() const { return f_ != nullptr; }

 private:
  void flush() {
    if (f_ && !buf_.empty()) std::fwrite(buf_.data(), 1, buf_.size(), f_);
    buf_.clear();
  }
  static constexpr std::size_t kBlock = 4 << 20;
  std::FILE* f_;
  std::string buf_;
};

long long flow_id(int round, int step, int sender) {
  return (static_cast<long long>(round) * kSteps + step) * P + sender + 1;
}

// One transfer step of rank r: the receive from r-1 (reduce in the first half) and the
// send to r+1, each with its flow event, as core/trace/chrome_writer.cpp writes them.
void write_step(Out& o, int r, int round, int step, long long t) {
  const int from = (r + P - 1) % P, to = (r + 1) % P, tag = (step < P - 1 ? 200 : 300) + step % (P - 1);
  const bool reduce = step < P - 1;
  o << ",\n{\"ph\":\"X\",\"cat\":\"recv\",\"name\":\"" << (reduce ? "recv_reduce \u2190 " : "recv \u2190 ") << from
    << "\",\"pid\":" << r << ",\"tid\":0,\"ts\":";
  o.us(t) << ",\"dur\":0.500,\"args\":{\"bytes\":128,\"peer\":" << from << ",\"tag\":" << tag << ",\"step\":" << step
          << ",\"chunk\":" << (r - step - 1 + 2 * P) % P << ",\"chunk_count\":1" << (reduce ? ",\"reduce\":1" : "")
          << ",\"flow\":" << flow_id(round, step, from) << "}}";
  o << ",\n{\"ph\":\"f\",\"cat\":\"transfer\",\"name\":\"transfer\",\"id\":" << flow_id(round, step, from)
    << ",\"pid\":" << r << ",\"tid\":0,\"ts\":";
  o.us(t + 499) << ",\"bp\":\"e\"}";
  o << ",\n{\"ph\":\"X\",\"cat\":\"send\",\"name\":\"send \u2192 " << to << "\",\"pid\":" << r << ",\"tid\":1,\"ts\":";
  o.us(t + 100) << ",\"dur\":0.800,\"args\":{\"bytes\":128,\"peer\":" << to << ",\"tag\":" << tag
                << ",\"step\":" << step << ",\"chunk\":" << (r - step + 2 * P) % P
                << ",\"chunk_count\":1,\"flow\":" << flow_id(round, step, r) << "}}";
  o << ",\n{\"ph\":\"s\",\"cat\":\"transfer\",\"name\":\"transfer\",\"id\":" << flow_id(round, step, r)
    << ",\"pid\":" << r << ",\"tid\":1,\"ts\":";
  o.us(t + 100) << "}";
}

void write_rank(Out& o, int r) {
  o << ",\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" << r << ",\"args\":{\"name\":\"rank " << r << "\"}}";
  for (int k = 0; k < 6; ++k) {  // the lab's buffers: allocated, then freed
    o << ",\n{\"ph\":\"C\",\"name\":\"memory (bytes)\",\"pid\":" << r << ",\"ts\":";
    o.us(1000 + 10LL * k) << ",\"args\":{\"param\":0,\"grad\":0,\"optimizer\":0,\"activation\":0,\"comm\":"
                          << 65536LL * (k < 3 ? k + 1 : 6 - k - 1) << ",\"other\":0}}";
  }
  o << ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" << r << ",\"tid\":0,\"args\":{\"name\":\"main\"}}";
  o << ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" << r << ",\"tid\":1,\"args\":{\"name\":\"main #2\"}}";
  const long long round_ns = kSteps * 3000LL;
  o << ",\n{\"ph\":\"X\",\"cat\":\"phase\",\"name\":\"ring all_reduce\",\"pid\":" << r << ",\"tid\":0,\"ts\":";
  o.us(100000 + round_ns) << ",\"dur\":";
  o.us(round_ns) << ",\"args\":{\"bytes\":0}}";
  const char* collectives[] = {"all_reduce", "all_reduce", "all_reduce",    "all_reduce", "all_reduce",
                               "all_reduce", "all_reduce", "all_reduce",    "barrier",    "barrier",
                               "barrier",    "all_gather", "reduce_scatter"};
  long long t = 100000 + kRounds * round_ns;
  for (const char* c : collectives) {
    o << ",\n{\"ph\":\"X\",\"cat\":\"collective\",\"name\":\"" << c << "\",\"pid\":" << r << ",\"tid\":0,\"ts\":";
    o.us(t += 20000) << ",\"dur\":15.000,\"args\":{\"bytes\":65536}}";
  }
  for (int round = 0; round < kRounds; ++round)
    for (int step = 0; step < kSteps; ++step)
      write_step(o, r, round, step, 100000 + round * round_ns + step * 3000LL + 2 * r);
}

void write_512_rank_trace(const std::string& path) {
  Out o(path);
  ASSERT_TRUE(o.ok()) << "cannot write " << path;
  o << "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"algo\":\"ring\",\"bytes\":\"65536\",\"chunks\":\"512\","
       "\"collective\":"
       "\"all_reduce\",\"dtype\":\"float\",\"lab\":\"collectives\",\"op\":\"sum\",\"report\":\"{\\\"ok\\\":true,"
       "\\\"rows\\\":[]}\","
       "\"world_size\":\"512\"},\"traceEvents\":[\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":0,\"args\":{"
       "\"name\":\"dtlab\"}}";
  for (int r = 0; r < P; ++r) write_rank(o, r);
  o << "\n]}\n";
}

}  // namespace

TEST(TraceScale, A512RankTraceLoadsInUnderOneGiB) {
  TempFolder dir("viz_scale_512");
  const std::string path = dir.file("collectives512.json");
  write_512_rank_trace(path);
  const auto t0 = std::chrono::steady_clock::now();
  ChildLimits limits;
  limits.address_space = std::uint64_t(4) << 30;  // a guard: the old loader wanted 16 GB and more
  limits.seconds = 100;
  const ChildResult r = run_in_child([&] { return load_like_the_app(path); }, limits);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("512-rank trace (%.2f GB of JSON): %s; peak %ld MiB, %.1f s\n",
              double(std::filesystem::file_size(path)) / 1e9, r.describe().c_str(), r.max_rss_kb / 1024, seconds);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const long long spans = P * (1 + 13 + kRounds * kSteps * 2LL), receives = P * kRounds * 1LL * kSteps;
  EXPECT_NE(r.message.find("loaded " + std::to_string(spans) + " events, 512 ranks, " + std::to_string(receives) +
                           " transfers"),
            std::string::npos)
      << r.message;
  EXPECT_LT(r.max_rss_kb, 1024 * 1024) << "peak resident memory " << r.max_rss_kb / 1024
                                       << " MiB, the limit is 1024 MiB";
}
