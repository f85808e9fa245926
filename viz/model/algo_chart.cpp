#include "viz/model/algo_chart.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/theory/gpu_profile.h"

namespace dtl::viz {

namespace {

constexpr theory::NcclAlgo kAlgos[] = {theory::NcclAlgo::ring, theory::NcclAlgo::tree, theory::NcclAlgo::nvls};
constexpr theory::NcclProto kProtos[] = {theory::NcclProto::ll, theory::NcclProto::ll128, theory::NcclProto::simple};

// A finite number field, or NaN (a hand-edited JSON may hold anything).
double bench_number(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : std::nan("");
}

std::string bench_text(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

AlgoChartInput read_bench_json(const nlohmann::json& bench) {
  const char* what = "; write one with dtlab bench all_reduce --ranks 4 -b 8 -e 64M -f 4 --json FILE";
  if (!bench.is_object() || !bench.contains("rows") || !bench["rows"].is_array())
    throw UsageError(std::string("not a dtlab bench JSON (no \"rows\")") + what);
  AlgoChartInput in;
  const std::optional<CollectiveKind> c = parse_collective_kind(bench_text(bench, "collective"));
  in.collective = c.value_or(CollectiveKind::none);
  if (in.collective != CollectiveKind::all_reduce && in.collective != CollectiveKind::reduce_scatter &&
      in.collective != CollectiveKind::all_gather)
    throw UsageError("NCCL's tuning model predicts all_reduce, reduce_scatter and all_gather, not '" +
                     bench_text(bench, "collective") + "'" + what);
  const double ranks = bench_number(bench, "ranks");
  if (!(ranks >= 2 && ranks <= 1 << 20)) throw UsageError(std::string("the bench JSON needs \"ranks\" >= 2") + what);
  in.ranks = int(ranks);
  in.impl = bench_text(bench, "impl"), in.backend = bench_text(bench, "backend");
  if (bench.contains("link") && bench["link"].is_object()) in.link = bench_text(bench["link"], "name");
  for (const nlohmann::json& row : bench["rows"]) {
    if (!row.is_object() || (row.contains("inplace") && row["inplace"] != false)) continue;
    const MeasuredPoint p{bench_number(row, "bytes"), bench_number(row, "time_us") * 1e-6,
                          bench_number(row, "busbw_GBps") * 1e9};
    if (std::isfinite(p.bytes) && p.bytes > 0 && std::isfinite(p.time_s) && p.time_s > 0 && std::isfinite(p.busbw_Bps))
      in.measured.push_back(p);
  }
  return in;
}

AlgoChart make_algo_chart(const AlgoChartInput& in, const std::string& gpu, int per_node) {
  AlgoChart chart;
  const theory::NcclFabric f = theory::nccl_fabric(theory::gpu_profile(gpu), in.ranks, per_node);
  for (double s = kChartMinBytes; s <= kChartMaxBytes; s *= 4) chart.sizes.push_back(s);
  for (const theory::NcclAlgo a : kAlgos)
    for (const theory::NcclProto p : kProtos) {
      AlgoSeries series{a, p, std::string(theory::nccl_algo_name(a)) + "/" + theory::nccl_proto_name(p), {}, {}};
      bool any = false;
      for (const double s : chart.sizes) {
        const theory::NcclCost cost = theory::nccl_cost(in.collective, s, f, a, p);
        series.time_s.push_back(cost.supported ? cost.time_s : 0);
        series.supported.push_back(cost.supported);
        any = any || cost.supported;
      }
      if (any) chart.series.push_back(std::move(series));
    }
  for (const double s : chart.sizes) {
    const theory::NcclChoice pick = theory::nccl_choose(in.collective, s, f);
    std::size_t i = 0;
    while (i + 1 < chart.series.size() && !(chart.series[i].algo == pick.algo && chart.series[i].proto == pick.proto))
      ++i;
    chart.winner.push_back(i);
  }
  chart.measured = in.measured;
  chart.title = std::string(collective_kind_name(in.collective)) + " on " + std::to_string(f.ranks) + " ranks, " +
                std::to_string(f.nodes) + " node(s) of " + gpu + ", " + std::to_string(f.channels) + " channels";
  return chart;
}

}  // namespace dtl::viz
