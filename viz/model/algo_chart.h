// The "which algorithm" chart (dtlab-viz --which-algorithm BENCH.json): for every size from
// 8 B to 8 GiB, the time core/theory/nccl_model.h predicts for each algorithm × protocol
// (the same nccl_cost() and nccl_choose() `dtlab bench all_reduce --algo auto` prints), the
// model's winner per size, and the points a `dtlab bench ... --json` run measured. Plain
// code so tests can check it; viz/app/algo_chart_view.cpp draws it.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "core/theory/nccl_model.h"

namespace dtl::viz {

// One measured size of the bench's JSON ("rows": bytes, time_us, busbw_GBps; the out-of-place
// rows, as nccl-tests' first columns).
struct MeasuredPoint {
  double bytes = 0, time_s = 0, busbw_Bps = 0;
};

// What the chart is made from: the run's bench JSON (its collective, ranks, link, rows).
struct AlgoChartInput {
  CollectiveKind collective = CollectiveKind::all_reduce;
  int ranks = 0;
  std::string impl, backend, link;  // as the JSON names them ("" : no link emulated)
  std::vector<MeasuredPoint> measured;
};
// Reads a bench JSON; throws UsageError naming what is missing (not a bench JSON, a
// collective --algo auto does not predict, fewer than 2 ranks). Rows that are not numbers
// are left out.
AlgoChartInput read_bench_json(const nlohmann::json& bench);

struct AlgoSeries {
  theory::NcclAlgo algo = theory::NcclAlgo::ring;
  theory::NcclProto proto = theory::NcclProto::simple;
  std::string name;             // "ring/LL128"
  std::vector<double> time_s;   // per size; 0 where the algorithm does not run (supported false)
  std::vector<bool> supported;  // per size
};

struct AlgoChart {
  std::vector<double> sizes;        // bytes: 8, 32, ..., 8 GiB (powers of 4)
  std::vector<AlgoSeries> series;   // the supported ones: ring, tree, nvls × LL, LL128, Simple
  std::vector<std::size_t> winner;  // per size: the index in `series` nccl_choose() picks
  std::vector<MeasuredPoint> measured;
  std::string title;  // what the prediction is for: "all_reduce, 4 ranks on 1 node of h100-sxm5, 16 channels"
};

inline constexpr double kChartMinBytes = 8, kChartMaxBytes = 8.0 * (1ull << 30);

// The chart for the run's collective and ranks on `gpu`'s fabric (nccl_fabric(gpu_profile(gpu),
// ranks, per_node)): what NCCL would pick on that GPU, beside what this run measured.
AlgoChart make_algo_chart(const AlgoChartInput& in, const std::string& gpu, int per_node);

}  // namespace dtl::viz
