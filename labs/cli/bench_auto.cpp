// `dtlab bench all_reduce --algo auto`: what NCCL would pick, predicted (nothing runs).
//
//   dtlab bench all_reduce --algo auto --gpu h100-sxm5 --ranks 16 --per-node 8 -b 8 -e 8G -f 8
//
// For each size of the sweep it prints the time core/theory/nccl_model.h predicts for every
// algorithm × protocol of NCCL's tuning model (ring / tree / nvls × LL / LL128 / Simple, at
// the fabric's channels), marks the fastest with *, and says why it won (nccl_choose's
// reason: its time and the runner-up's). The model is NCCL's structure (src/graph/tuning.cc):
//   time(algo, proto) = latency(algo, proto) + bytes / algbw(algo, proto)
// so small sizes go to the lowest latency (tree or LL) and large ones to the highest
// bandwidth (ring or NVLS with Simple).
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>

#include "core/error.h"
#include "core/theory/gpu_profile.h"
#include "core/theory/nccl_model.h"
#include "core/util/units.h"
#include "labs/cli/bench_plan.h"

namespace dtl::cli {

namespace {

constexpr theory::NcclAlgo kAlgos[] = {theory::NcclAlgo::ring, theory::NcclAlgo::tree, theory::NcclAlgo::nvls};
constexpr theory::NcclProto kProtos[] = {theory::NcclProto::ll, theory::NcclProto::ll128, theory::NcclProto::simple};

void print_auto_header(std::ostream& out, const BenchArgs& a, const theory::NcclFabric& f) {
  char line[256];
  std::snprintf(
      line, sizeof line,
      "# dtlab bench %s --algo auto  gpu %s  ranks %d on %d node(s)  channels %d  (predicted, nothing runs)\n",
      a.collective.c_str(), a.gpu.c_str(), f.ranks, f.nodes, f.channels);
  out << line << "#         size";
  for (const auto al : kAlgos)
    for (const auto p : kProtos) {
      const std::string name = std::string(theory::nccl_algo_name(al)) + "/" + theory::nccl_proto_name(p);
      std::snprintf(line, sizeof line, " %12s", name.c_str());
      out << line;
    }
  out << "   busbw  why (µs)\n#          (B)" << std::string(9 * 13, ' ') << "  (GB/s)\n";
}

void print_auto_row(std::ostream& out, CollectiveKind c, double bytes, const theory::NcclFabric& f) {
  const theory::NcclChoice pick = theory::nccl_choose(c, bytes, f);
  char cell[64];
  std::snprintf(cell, sizeof cell, "%14.0f", bytes);
  out << cell;
  for (const auto al : kAlgos)
    for (const auto p : kProtos) {
      const theory::NcclCost cost = theory::nccl_cost(c, bytes, f, al, p);
      const bool won = cost.supported && al == pick.algo && p == pick.proto;
      if (cost.supported)
        std::snprintf(cell, sizeof cell, " %11.1f%c", cost.time_s * 1e6, won ? '*' : ' ');
      else
        std::snprintf(cell, sizeof cell, " %12s", "-");
      out << cell;
    }
  std::snprintf(cell, sizeof cell, "  %6.1f  ", theory::nccl_bus_bandwidth(c, bytes, f) / 1e9);
  out << cell << pick.why << "\n";
}

}  // namespace

int run_bench_auto(const BenchArgs& a) {
  const std::optional<CollectiveKind> kind = parse_collective_kind(a.collective);
  const CollectiveKind c = kind.value_or(CollectiveKind::none);
  if (c != CollectiveKind::all_reduce && c != CollectiveKind::reduce_scatter && c != CollectiveKind::all_gather)
    throw UsageError("--algo auto predicts all_reduce, reduce_scatter and all_gather (NCCL's tuning model); not " +
                     a.collective);
  const int ranks = a.ranks > 0 ? a.ranks : 8;
  theory::NcclFabric f = theory::nccl_fabric(theory::gpu_profile(a.gpu), ranks, a.per_node > 0 ? a.per_node : ranks);
  if (a.channels > 0) f.channels = a.channels;  // NCCL_MIN/MAX_NCHANNELS: the caps per channel scale with it
  const std::uint64_t lo = parse_size(a.min_bytes, "-b"), hi = parse_size(a.max_bytes, "-e");
  if (lo == 0 || hi < lo) throw UsageError("-b must be > 0 and <= -e");
  if (lo < hi && !(a.factor > 1)) throw UsageError("-f must be > 1 for a sweep");
  print_auto_header(std::cout, a, f);
  for (double s = double(lo); s <= double(hi) * 1.0000001; s *= a.factor) {
    print_auto_row(std::cout, c, s, f);
    if (lo == hi) break;
  }
  std::cout << "# * = nccl_choose's pick (the fastest supported algo/proto); '-': the algorithm does not run this "
               "collective here (tree: all_reduce only; nvls: one NVSwitch-3 node)\n";
  return 0;
}

}  // namespace dtl::cli
