// The peer report (bench/peers_report.h) on crafted results folders: ratios paired repeat
// by repeat, a run over its ceiling called a ceiling bug, α–β recovered from times made
// with known values, and the charts written as PNG files.
#include "bench/peers_report.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/theory/alpha_beta_fit.h"

namespace fs = std::filesystem;

namespace {

struct Folder {
  fs::path dir = fs::path(testing::TempDir()) / ("peers_" + std::to_string(getpid()) + "_" +
                                                 testing::UnitTest::GetInstance()->current_test_info()->name());
  Folder() { fs::create_directories(dir); }
  ~Folder() { fs::remove_all(dir); }
  void write(const std::string& name, const std::string& text) const { std::ofstream(dir / name) << text; }
  std::string report(const std::string& plots = "") const {
    std::ostringstream out;
    dtl::peers::report(dir.string(), plots, out);
    return out.str();
  }
};

// One sweep file with one out-of-place row; dtlab's carry the memory bandwidth.
std::string sweep(double bytes, double busbw_GBps, double memory_GBps = 0) {
  std::ostringstream s;
  s << R"({"rows": [{"bytes": )" << bytes << R"(, "inplace": false, "time_us": 100, "busbw_GBps": )" << busbw_GBps
    << "}]";
  if (memory_GBps > 0) s << R"(, "memory_GBps": {"read": )" << memory_GBps << R"(}, "ceiling_min_bytes": 1048576)";
  return s.str() + "}";
}

}  // namespace

TEST(PeersReport, RatiosArePairedRepeatByRepeat) {
  const Folder f;
  f.write("ar-threads-library-p2-r1.json", sweep(64 << 20, 1.2, 100));
  f.write("ar-threads-library-p2-r2.json", sweep(64 << 20, 2.0, 100));
  f.write("ar-gloo-p2-r1.json", sweep(64 << 20, 0.2));
  f.write("ar-gloo-p2-r2.json", sweep(64 << 20, 1.0));
  const std::string out = f.report();
  EXPECT_NE(out.find("| 2 | 64M | 1.6 [1.2–2] |"), std::string::npos) << out;
  EXPECT_NE(out.find("4.0 [2.0–6.0]"), std::string::npos) << out;  // 1.2/0.2 = 6 and 2.0/1.0 = 2
  EXPECT_EQ(out.find("CEILING BUG"), std::string::npos) << out;
}

// Threads, P = 2: busbw <= (P-1)/P² · BW = 2.5 GB/s at BW = 10 GB/s.
TEST(PeersReport, ARunOverItsCeilingIsACeilingBug) {
  const Folder f;
  f.write("ar-threads-library-p2-r1.json", sweep(64 << 20, 2.4, 10));
  f.write("ar-threads-library-p2-r2.json", sweep(64 << 20, 2.6, 10));
  const std::string out = f.report();
  EXPECT_NE(out.find("P = 2: BW = 10.00 GB/s -> threads ceiling 2.50 GB/s"), std::string::npos) << out;
  EXPECT_NE(out.find("CEILING BUG"), std::string::npos) << out;
}

TEST(PeersReport, FitRecoversAlphaAndBetaAndWritesCharts) {
  const Folder f;
  for (auto algo : {dtl::AlgorithmKind::ring, dtl::AlgorithmKind::tree}) {
    std::ostringstream rows;
    for (double n = 1024; n <= (16 << 20); n *= 4) {
      const double t = 10e-6 * dtl::theory::latency_steps(algo, 4, n) + 1e-9 * dtl::theory::critical_bytes(algo, 4, n);
      rows << (n > 1024 ? "," : "") << R"({"bytes": )" << n << R"(, "inplace": true, "time_us": )" << t * 1e6
           << R"(, "busbw_GBps": 1})";
    }
    f.write("fit-threads-" + std::string(dtl::algorithm_kind_name(algo)) + "-p4.json",
            "{\"rows\": [" + rows.str() + "]}");
  }
  f.write("ar-threads-library-p4-r1.json", sweep(64 << 20, 2, 50));
  const std::string out = f.report(f.dir.string());
  EXPECT_NE(out.find("threads, P = 4: α = 10.00 µs, β = 1/(1.00 GB/s); error rms 0%, max 0%"), std::string::npos)
      << out;
  EXPECT_NE(out.find("ring beats tree above: predicted 7.81K"), std::string::npos) << out;  // 2α/(2.5β)
  for (const char* png : {"peers-busbw-4-ranks.png", "peers-alpha-beta-threads.png"}) {
    std::ifstream in(f.dir / png, std::ios::binary);
    char magic[4] = {};
    in.read(magic, 4);
    EXPECT_EQ(std::string(magic + 1, 3), "PNG") << png;
  }
}

namespace {

// A ping-pong sweep whose one-way times are α + n·β exactly, 1K ... 16M.
std::string ping_pong(double alpha, double beta, double noise = 0) {
  std::ostringstream rows;
  int i = 0;
  for (double n = 1024; n <= (16 << 20); n *= 4, ++i)
    rows << (n > 1024 ? "," : "") << R"({"bytes": )" << n << R"(, "inplace": false, "time_us": )"
         << (alpha + n * beta) * (1 + (i % 2 ? noise : -noise)) * 1e6 << R"(, "busbw_GBps": 1})";
  return "{\"rows\": [" + rows.str() + "]}";
}

// The ring all-reduce on 4 ranks (in place) as 2(P-1)·α + 2(P-1)/P·N·β, scaled by `factor`.
std::string ring_sweep(double alpha, double beta, double factor) {
  std::ostringstream rows;
  for (double n = 1024; n <= (16 << 20); n *= 4)
    rows << (n > 1024 ? "," : "") << R"({"bytes": )" << n << R"(, "inplace": true, "time_us": )"
         << (6 * alpha + 1.5 * n * beta) * factor * 1e6 << R"(, "busbw_GBps": 1})";
  return "{\"rows\": [" + rows.str() + "]}";
}

std::string ddp_run(double step_s, double one_rank_s, const std::string& link_json) {
  std::ostringstream s;
  s << R"({"config": {)" << link_json << R"(}, "rows": [{"id": "bucketed.step_time", "measured": )" << step_s
    << R"(, "spread": {"min": )" << step_s * 0.9 << R"(, "max": )" << step_s * 1.1 << R"(, "runs": 5}},)"
    << R"({"id": "one_rank_step_time", "measured": )" << one_rank_s << R"(},)"
    << R"({"id": "bucketed.grad_bytes_reduced", "measured": 4000000}]})";
  return s.str();
}

}  // namespace

// Ping-pong times made from α = 20 µs, β = 1/(1 GB/s) give them back, and the ring they
// predict matches a ring made from the same link; one 30 % slower is called over target.
TEST(PeersReport, PointToPointFitPredictsTheRingAllReduce) {
  const Folder f;
  f.write("p2p-link-p2-r1.json", ping_pong(20e-6, 1e-9));
  f.write("fit-link-ring-p4.json", ring_sweep(20e-6, 1e-9, 1.0));
  f.write("p2p-threads-p2-r1.json", ping_pong(5e-6, 1e-10, 0.05));
  f.write("fit-threads-ring-p4.json", ring_sweep(5e-6, 1e-10, 1.3));
  const std::string out = f.report(f.dir.string());
  EXPECT_NE(out.find("| link | point-to-point, 2 ranks | 20.00 | 1.00 | 0% | 0% |"), std::string::npos) << out;
  // 4 ranks, 1 MiB: 6·20 µs + 1.5·1048576 B / 1 GB/s = 1692.864 µs, predicted exactly.
  EXPECT_NE(out.find("| link | 1M | 1693 | 1693 | +0% |"), std::string::npos) << out;
  EXPECT_NE(out.find("link: the point-to-point α–β predicts the ring within 0% at every size (within"),
            std::string::npos)
      << out;
  // ±5 % noise: α and β within a few percent, the error shown; the slower ring is over target.
  EXPECT_NE(out.find("| threads | point-to-point, 2 ranks | "), std::string::npos) << out;
  EXPECT_NE(out.find("threads: the point-to-point α–β predicts the ring within"), std::string::npos) << out;
  EXPECT_NE(out.find("(over the 20% target)"), std::string::npos) << out;
  std::ifstream png(f.dir / "peers-p2p-fit.png", std::ios::binary);
  EXPECT_TRUE(png.good());
}

TEST(PeersReport, DdpStepVsRanksAndLinkHasTheFormulaAndAChart) {
  const Folder f;
  const std::string slow = R"("link": {"name": "slow", "latency_us": 100, "bandwidth_GBps": 1})";
  f.write("ddpscale-none-p1.json", ddp_run(0.010, 0.010, ""));
  f.write("ddpscale-none-p2.json", ddp_run(0.006, 0.010, ""));
  f.write("ddpscale-slow-p1.json", ddp_run(0.010, 0.010, slow));
  f.write("ddpscale-slow-p2.json", ddp_run(0.0105, 0.010, slow));
  const std::string out = f.report(f.dir.string());
  // 2 ranks on the slow link: 10/2 ms + 2·100 µs + 4 MB / 1 GB/s = 9.2 ms.
  EXPECT_NE(out.find("| slow | 100 µs, 1 GB/s | 10 [9–11] | 10.5 [9.45–11.5] | 9.2 |"), std::string::npos) << out;
  EXPECT_NE(out.find("| none | memory | 10 [9–11] | 6 [5.4–6.6] | — |"), std::string::npos) << out;
  EXPECT_NE(out.find("| ideal t1/P | | 10 | 5 |"), std::string::npos) << out;
  EXPECT_EQ(out.find("| 1 | —"), std::string::npos) << out;  // not rows of the PyTorch DDP table
  std::ifstream png(f.dir / "peers-ddp-scaling.png", std::ios::binary);
  char magic[4] = {};
  png.read(magic, 4);
  EXPECT_EQ(std::string(magic + 1, 3), "PNG");
}
