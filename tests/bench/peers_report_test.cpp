// The peer report (bench/peers_report.h) on crafted results folders: ratios paired repeat
// by repeat, a run over its ceiling called a ceiling bug, α–β recovered from times made
// with known values, and the charts written as PNG files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "bench/peers_report.h"
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
  s << R"({"rows": [{"bytes": )" << bytes << R"(, "inplace": false, "time_us": 100, "busbw_GBps": )" << busbw_GBps << "}]";
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
  for (auto algo : {dtl::theory::Algo::ring, dtl::theory::Algo::tree}) {
    std::ostringstream rows;
    for (double n = 1024; n <= (16 << 20); n *= 4) {
      const double t = 10e-6 * dtl::theory::latency_steps(algo, 4, n) + 1e-9 * dtl::theory::critical_bytes(algo, 4, n);
      rows << (n > 1024 ? "," : "") << R"({"bytes": )" << n << R"(, "inplace": true, "time_us": )" << t * 1e6
           << R"(, "busbw_GBps": 1})";
    }
    f.write("fit-threads-" + std::string(dtl::theory::algo_name(algo)) + "-p4.json", "{\"rows\": [" + rows.str() + "]}");
  }
  f.write("ar-threads-library-p4-r1.json", sweep(64 << 20, 2, 50));
  const std::string out = f.report(f.dir.string());
  EXPECT_NE(out.find("threads, P = 4: α = 10.00 µs, β = 1/(1.00 GB/s); error rms 0%, max 0%"), std::string::npos) << out;
  EXPECT_NE(out.find("ring beats tree above: predicted 7.81K"), std::string::npos) << out;  // 2α/(2.5β)
  for (const char* png : {"peers-busbw-4-ranks.png", "peers-alpha-beta-threads.png"}) {
    std::ifstream in(f.dir / png, std::ios::binary);
    char magic[4] = {};
    in.read(magic, 4);
    EXPECT_EQ(std::string(magic + 1, 3), "PNG") << png;
  }
}
