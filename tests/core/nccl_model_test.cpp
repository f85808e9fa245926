// NCCL's tuning model (core/theory/nccl_model.h) against published nccl-tests bus bandwidths:
// each row names where its figure was published; the model was not fitted to any of them
// (the A100's NVLink bandwidth comes from a 2-GPU run, nccl-tests issue #178, and is checked
// here on 8 GPUs; the H100's is NCCL's own 20.6 GB/s per link; every other constant is NCCL
// 2.18.5's, src/graph/tuning.cc and search.cc).
#include "core/theory/nccl_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/error.h"

namespace th = dtl::theory;

namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024, kMiB = 1024.0 * 1024;

struct Published {
  const char* what;
  const char* gpu;
  dtl::CollectiveKind collective;
  int ranks, per_node, nics_per_node;
  bool ring_only;  // NCCL_ALGO=RING
  double bytes, busbw_GBps;
  const char* source;
};

const Published kRows[] = {
    {"8× A100 all_reduce, 1 GiB", "a100-sxm4-80gb", dtl::CollectiveKind::all_reduce, 8, 8, 0, false, kGiB, 200,
     "nccl-tests issue #149 (HPE Apollo 6500, NCCL 2.18.1): busbw ~200 GB/s"},
    {"24× A100 (3 nodes, 4 HDR NICs) all_reduce, 128 MiB", "a100-sxm4-80gb", dtl::CollectiveKind::all_reduce, 24, 8, 4,
     false, 128 * kMiB, 96, "nccl-tests issue #119: peak busbw ~96 GB/s, average 84.8 over 1–128 MiB"},
    {"8× H100 all_reduce NCCL_ALGO=RING, 8 GiB", "h100-sxm5", dtl::CollectiveKind::all_reduce, 8, 8, 0, true, 8 * kGiB,
     370, "nccl-tests issue #212 (S. Jeaugey): 'effective NVLink bandwidth of 370GB/s ... with NCCL_ALGO=RING'"},
    {"8× H100 all_gather, 8 GiB", "h100-sxm5", dtl::CollectiveKind::all_gather, 8, 8, 0, false, 8 * kGiB, 370,
     "nccl-tests issue #212: the same 370 GB/s 'when running non-allreduce operations'"},
    {"8× H100 all_reduce (NVLS), 8 GiB", "h100-sxm5", dtl::CollectiveKind::all_reduce, 8, 8, 0, false, 8 * kGiB, 480,
     "nccl-tests issue #212: 'On 8 GPUs, you should reach a peak busBw of ~480GB/s (algbw ~275GB/s)'"},
};

// The model's bus bandwidth for `bytes`: the fastest (algo, proto) NCCL would pick, or the fastest
// protocol of `only` when the run forced NCCL_ALGO.
double model_busbw(const char* gpu, dtl::CollectiveKind c, int ranks, int per_node, int nics, const th::NcclAlgo* only,
                   double bytes) {
  th::NcclFabric f = th::nccl_fabric(th::gpu_profile(gpu), ranks, per_node);
  f.nics_per_node = nics;
  double t = only ? -1 : th::nccl_time(c, bytes, f);
  if (only)
    for (th::NcclProto p : {th::NcclProto::ll, th::NcclProto::ll128, th::NcclProto::simple}) {
      const th::NcclCost cost = th::nccl_cost(c, bytes, f, *only, p);
      if (cost.supported && (t < 0 || cost.time_s < t)) t = cost.time_s;
    }
  return bytes / t * th::busbw_factor(c, ranks) / 1e9;
}

double model_busbw(const Published& r) {
  const th::NcclAlgo ring = th::NcclAlgo::ring;
  return model_busbw(r.gpu, r.collective, r.ranks, r.per_node, r.nics_per_node, r.ring_only ? &ring : nullptr, r.bytes);
}

// Published nccl-tests all_reduce_perf curves, every power of two from 1 MiB (bus bandwidth, GB/s).
struct Point {
  double bytes, busbw_GBps;
};
struct Curve {
  const char* what;
  const char* gpu;
  int ranks, per_node, nics_per_node;
  const th::NcclAlgo* only;  // the NCCL_ALGO the run forced, or nullptr: NCCL's own choice
  std::vector<Point> points;
  const char* source;
};

// Sizes 2^k bytes from 1 MiB on, one value each (nccl-tests -b 8 -e 8G -f 2).
std::vector<Point> from_one_mib(std::initializer_list<double> busbw) {
  std::vector<Point> points;
  double bytes = kMiB;
  for (double b : busbw) points.push_back({bytes, b}), bytes *= 2;
  return points;
}

constexpr th::NcclAlgo kNvls = th::NcclAlgo::nvls;

std::vector<Curve> published_curves() {
  return {
      {"8× A100-SXM4-80GB, one node (Azure ND A100 v4)", "a100-sxm4-80gb", 8, 8, 0, nullptr,
       from_one_mib({36.22, 53.54, 71.43, 89.99, 109.22, 132.77, 166.63, 174.18, 213.87, 221.58, 228.10, 230.22, 230.48,
                     231.58}),
       "github.com/Azure/AI-benchmarking-guide, Azure_Results/ND_A100_v4_results.md: NCCL 2.18.5, in-place; "
       "NCCL's own algorithm (the page's 'NVLS' label cannot apply: the A100 has no NVLink SHARP)"},
      {"8× H100 80GB HBM3, one node, NCCL_ALGO=NVLS (Azure ND H100 v5)", "h100-sxm5", 8, 8, 0, &kNvls,
       from_one_mib({43.70, 81.93, 128.73, 172.13, 234.45, 295.53, 361.78, 400.61, 423.38, 438.46, 466.35, 472.36,
                     475.54, 478.87}),
       "github.com/Azure/AI-benchmarking-guide, Azure Results/ND_H100_v5_results.md: NCCL 2.18.5, in-place, "
       "Benchmarks/NVIDIA/NCCLBandwidth.py sets NCCL_ALGO=NVLS"},
      {"24× A100-SXM4-40GB, 3 nodes, 4 HDR 200G NICs each",
       "a100-sxm4-80gb",
       24,
       8,
       4,
       nullptr,
       {{32 * kMiB + 8, 87.75}, {128 * kMiB + 8, 96.45}},
       "github.com/NVIDIA/nccl-tests/issues/119: out-of-place, sizes 8 B + k MiB (the rows of 1–16 and 64 MiB "
       "were not in the stored copy)"},
  };
}

// Points the model still misses by more than 15 %, with the measured reason: listed, not asserted.
struct Miss {
  const char* curve;  // the start of Curve::what
  double from_bytes, to_bytes;
  const char* reason;
};
const Miss kMisses[] = {
    {"8× A100", 4 * kMiB, 32 * kMiB,
     "ring/LL128 and Simple as NCCL 2.18.5's tuning.cc prices them (this model reproduces its estimate); the "
     "measured calls reach 62–73 % of that bandwidth: NCCL's estimate is this optimistic here"},
    {"8× H100", kMiB, 64 * kMiB,
     "NCCL's NVLS estimate, 23 µs + bytes/(320 GB/s·5/6), has no ramp; the measured calls take 14–50 µs more "
     "below 128 MiB (NVLS moves 16–128 KiB chunks per channel, enqueue.cc computeColl; not in tuning.cc)"},
};

const Miss* listed_miss(const Curve& c, double bytes) {
  for (const Miss& m : kMisses)
    if (std::string(c.what).rfind(m.curve, 0) == 0 && bytes >= m.from_bytes && bytes <= m.to_bytes) return &m;
  return nullptr;
}

}  // namespace

TEST(NcclModel, BusBandwidthWithinFifteenPercentOfPublishedRuns) {
  double worst = 0;
  for (const Published& r : kRows) {
    const double model = model_busbw(r), error = model / r.busbw_GBps - 1;
    std::printf("%-52s published %6.1f GB/s  model %6.1f GB/s  %+5.1f %%  (%s)\n", r.what, r.busbw_GBps, model,
                100 * error, r.source);
    worst = std::max(worst, std::abs(error));
    EXPECT_LE(std::abs(error), 0.15) << r.what;
  }
  std::printf("largest |error| %.1f %%\n", 100 * worst);
}

TEST(NcclModel, PublishedCurvesWithinFifteenPercentFromOneMiB) {
  double worst_asserted = 0, worst_listed = 0;
  for (const Curve& c : published_curves()) {
    std::printf("%s\n  (%s)\n", c.what, c.source);
    const double factor = th::busbw_factor(dtl::CollectiveKind::all_reduce, c.ranks);
    for (const Point& pt : c.points) {
      const double model =
          model_busbw(c.gpu, dtl::CollectiveKind::all_reduce, c.ranks, c.per_node, c.nics_per_node, c.only, pt.bytes);
      const double error = model / pt.busbw_GBps - 1;
      const Miss* miss = listed_miss(c, pt.bytes);
      std::printf("  %9.0f KiB  published %6.1f GB/s  model %6.1f GB/s  %+6.1f %%  (%.1f µs measured, %.1f model)%s\n",
                  pt.bytes / 1024, pt.busbw_GBps, model, 100 * error, pt.bytes * factor / pt.busbw_GBps / 1e3,
                  pt.bytes * factor / model / 1e3, miss ? "  listed miss" : "");
      if (miss) {
        worst_listed = std::max(worst_listed, std::abs(error));
        EXPECT_GT(std::abs(error), 0.15) << c.what << ", " << pt.bytes << " B: within 15 % now, take it off kMisses";
        continue;
      }
      worst_asserted = std::max(worst_asserted, std::abs(error));
      EXPECT_LE(std::abs(error), 0.15) << c.what << ", " << pt.bytes << " B";
    }
  }
  for (const Miss& m : kMisses)
    std::printf("listed miss, %s %.0f–%.0f MiB: %s\n", m.curve, m.from_bytes / kMiB, m.to_bytes / kMiB, m.reason);
  std::printf("largest |error| asserted %.1f %%, listed misses %.1f %%\n", 100 * worst_asserted, 100 * worst_listed);
}

TEST(NcclModel, ChoosesLowLatencyForSmallAndBandwidthForLarge) {
  const th::NcclFabric f = th::nccl_fabric(th::gpu_profile("a100-sxm4-80gb"), 8, 8);
  const th::NcclChoice small = th::nccl_choose(dtl::CollectiveKind::all_reduce, 4096, f);
  const th::NcclChoice large = th::nccl_choose(dtl::CollectiveKind::all_reduce, kGiB, f);
  EXPECT_EQ(small.proto, th::NcclProto::ll) << small.why;
  EXPECT_EQ(large.algo, th::NcclAlgo::ring) << large.why;
  EXPECT_EQ(large.proto, th::NcclProto::simple) << large.why;
  const th::NcclFabric h = th::nccl_fabric(th::gpu_profile("h100-sxm5"), 8, 8);
  EXPECT_EQ(th::nccl_choose(dtl::CollectiveKind::all_reduce, kGiB, h).algo, th::NcclAlgo::nvls);
  // NVLS reduces on one node only; across nodes the H100 is back to ring or tree.
  const th::NcclFabric two_nodes = th::nccl_fabric(th::gpu_profile("h100-sxm5"), 16, 8);
  EXPECT_NE(th::nccl_choose(dtl::CollectiveKind::all_reduce, kGiB, two_nodes).algo, th::NcclAlgo::nvls);
}

TEST(NcclModel, RingTimeIsLatencyPlusBytesOverAlgorithmBandwidth) {
  // Independent arithmetic: 8 A100s, ring Simple, 1 GiB: latency 8.4 + 14·3.4 µs; algbw 208·8/14 GB/s.
  const th::NcclFabric f = th::nccl_fabric(th::gpu_profile("a100-sxm4-80gb"), 8, 8);
  const th::NcclCost c =
      th::nccl_cost(dtl::CollectiveKind::all_reduce, kGiB, f, th::NcclAlgo::ring, th::NcclProto::simple);
  const double expected = (8.4 + 14 * 3.4) * 1e-6 + kGiB / (208e9 * 8 / 14);
  EXPECT_NEAR(c.time_s, expected, 1e-12) << "difference " << c.time_s - expected;
  EXPECT_FALSE(
      th::nccl_cost(dtl::CollectiveKind::all_gather, kGiB, f, th::NcclAlgo::tree, th::NcclProto::simple).supported);
  EXPECT_EQ(th::nccl_time(dtl::CollectiveKind::all_reduce, kGiB, th::nccl_fabric(th::gpu_profile("h200"), 1, 8)), 0);
}

TEST(NcclModel, NvlsAndRingLlAsNcclPricesThem) {
  // Independent arithmetic from NCCL 2.18.5. NVLS on 8 H100s: the NVLS graph's 8 channels × 40 GB/s
  // (9 × 40 ≤ 370.8, 9 × 60 is not), algbw × 5/6, latency 23 µs.
  const th::NcclFabric h = th::nccl_fabric(th::gpu_profile("h100-sxm5"), 8, 8);
  const th::NcclCost nvls =
      th::nccl_cost(dtl::CollectiveKind::all_reduce, kGiB, h, th::NcclAlgo::nvls, th::NcclProto::simple);
  const double nvls_expected = 23e-6 + kGiB / (8 * 40e9 * 5 / 6);
  EXPECT_NEAR(nvls.time_s, nvls_expected, 1e-12) << "difference " << nvls.time_s - nvls_expected;
  // 4 H100s: 5 × 60 ≤ 370.8, so 4 channels × 60 GB/s.
  const th::NcclFabric h4 = th::nccl_fabric(th::gpu_profile("h100-sxm5"), 4, 8);
  EXPECT_NEAR(
      th::nccl_cost(dtl::CollectiveKind::all_reduce, kGiB, h4, th::NcclAlgo::nvls, th::NcclProto::simple).algbw_Bps,
      4 * 60e9 * 5 / 6, 1);
  // Ring LL on 8 A100s: a quarter of the ring's 208 GB/s; latency 6.6 + 14 × 0.6 µs.
  const th::NcclFabric a = th::nccl_fabric(th::gpu_profile("a100-sxm4-80gb"), 8, 8);
  const th::NcclCost ll =
      th::nccl_cost(dtl::CollectiveKind::all_reduce, kMiB, a, th::NcclAlgo::ring, th::NcclProto::ll);
  const double ll_expected = (6.6 + 14 * 0.6) * 1e-6 + kMiB / (208e9 / 4 * 8 / 14);
  EXPECT_NEAR(ll.time_s, ll_expected, 1e-12) << "difference " << ll.time_s - ll_expected;
}

TEST(NcclModel, NamesParseAndBadNamesSayWhatIsAllowed) {
  EXPECT_EQ(th::parse_nccl_algo("tree"), th::NcclAlgo::tree);
  EXPECT_EQ(th::parse_nccl_proto("LL128"), th::NcclProto::ll128);
  EXPECT_THROW(th::parse_nccl_algo("butterfly"), dtl::UsageError);
  EXPECT_THROW(th::gpu_profile("v100"), dtl::UsageError);
}
