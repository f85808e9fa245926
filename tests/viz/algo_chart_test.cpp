// The "which algorithm" chart's model (viz/model/algo_chart.h) against core/theory/nccl_model.h
// called directly: every series point is nccl_cost()'s time, the winner per size is
// nccl_choose()'s pick, and the measured points are a crafted bench JSON's rows exactly.
#include "viz/model/algo_chart.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/theory/gpu_profile.h"

namespace dtl::viz {
namespace {

nlohmann::json crafted_bench(int ranks) {
  return {{"collective", "all_reduce"},
          {"impl", "ring"},
          {"backend", "threads"},
          {"ranks", ranks},
          {"rows",
           {{{"bytes", 1024}, {"inplace", false}, {"time_us", 12.5}, {"busbw_GBps", 0.125}},
            {{"bytes", 1024}, {"inplace", true}, {"time_us", 99.0}, {"busbw_GBps", 9.0}},
            {{"bytes", 1048576}, {"inplace", false}, {"time_us", 750.0}, {"busbw_GBps", 2.25}},
            {{"bytes", "broken"}, {"inplace", false}, {"time_us", 1.0}, {"busbw_GBps", 1.0}}}}};
}

TEST(AlgoChart, MeasuredPointsAreTheOutOfPlaceRowsExactly) {
  const AlgoChartInput in = read_bench_json(crafted_bench(4));
  EXPECT_EQ(in.ranks, 4);
  EXPECT_EQ(in.collective, CollectiveKind::all_reduce);
  ASSERT_EQ(in.measured.size(), 2u);  // the in-place row and the broken one left out
  EXPECT_EQ(in.measured[0].bytes, 1024.0);
  EXPECT_EQ(in.measured[0].time_s, 12.5 * 1e-6);  // µs → s as the model converts
  EXPECT_EQ(in.measured[0].busbw_Bps, 0.125 * 1e9);
  EXPECT_EQ(in.measured[1].bytes, 1048576.0);
  EXPECT_EQ(in.measured[1].time_s, 750 * 1e-6);
  EXPECT_EQ(in.measured[1].busbw_Bps, 2.25 * 1e9);
}

TEST(AlgoChart, SeriesAreNcclCostAndWinnerIsNcclChoose) {
  for (const auto& [ranks, per_node] : {std::pair{4, 4}, std::pair{8, 8}, std::pair{16, 8}}) {
    const AlgoChart chart = make_algo_chart(read_bench_json(crafted_bench(ranks)), "h100-sxm5", per_node);
    const theory::NcclFabric f = theory::nccl_fabric(theory::gpu_profile("h100-sxm5"), ranks, per_node);
    ASSERT_EQ(chart.sizes.size(), 16u);  // 2^3 .. 2^33 B by 4
    EXPECT_EQ(chart.sizes.front(), 8.0);
    EXPECT_EQ(chart.sizes.back(), 8.0 * (1ull << 30));
    ASSERT_GE(chart.series.size(), 6u);  // ring and tree × 3 protocols at least
    double largest = 0;
    for (const AlgoSeries& s : chart.series)
      for (std::size_t i = 0; i < chart.sizes.size(); ++i) {
        const theory::NcclCost c = theory::nccl_cost(CollectiveKind::all_reduce, chart.sizes[i], f, s.algo, s.proto);
        EXPECT_EQ(bool(s.supported[i]), c.supported);
        if (c.supported) largest = std::max(largest, std::abs(s.time_s[i] - c.time_s));
      }
    std::printf("ranks %d: largest |series - nccl_cost| %.3g s\n", ranks, largest);
    EXPECT_EQ(largest, 0.0);
    for (std::size_t i = 0; i < chart.sizes.size(); ++i) {
      const theory::NcclChoice pick = theory::nccl_choose(CollectiveKind::all_reduce, chart.sizes[i], f);
      const AlgoSeries& w = chart.series[chart.winner[i]];
      EXPECT_EQ(w.algo, pick.algo) << chart.sizes[i];
      EXPECT_EQ(w.proto, pick.proto) << chart.sizes[i];
      EXPECT_EQ(w.time_s[i], pick.time_s) << chart.sizes[i];
    }
  }
}

TEST(AlgoChart, SmallSizesGoToLowLatencyLargeToBandwidth) {
  const AlgoChart chart = make_algo_chart(read_bench_json(crafted_bench(16)), "h100-sxm5", 8);
  const AlgoSeries& small = chart.series[chart.winner.front()];
  const AlgoSeries& large = chart.series[chart.winner.back()];
  EXPECT_NE(small.proto, theory::NcclProto::simple);  // 8 B: LL or LL128, never Simple's fences
  EXPECT_EQ(large.proto, theory::NcclProto::simple);  // 8 GiB: the full bandwidth
}

TEST(AlgoChart, NotABenchJsonIsAUsageError) {
  EXPECT_THROW(read_bench_json(nlohmann::json{{"traceEvents", nlohmann::json::array()}}), UsageError);
  nlohmann::json one = crafted_bench(1);
  EXPECT_THROW(read_bench_json(one), UsageError);
  nlohmann::json bcast = crafted_bench(4);
  bcast["collective"] = "broadcast";
  EXPECT_THROW(read_bench_json(bcast), UsageError);
}

}  // namespace
}  // namespace dtl::viz
