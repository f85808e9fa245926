#include "labs/cli/bench_ceiling.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

#include "core/theory/ceiling.h"

namespace dtl::cli {

namespace {

theory::Transport transport_of(const BenchPlan& p) {
  return p.backend.kind == BackendKind::mpi ? theory::Transport::mpi_shared_memory
                                            : theory::Transport::shared_address_space;
}

// The kernel's view (sysfs) first: inside a VM glibc's sysconf reports the host's whole L3
// from CPUID (384 MiB on the 2-vCPU EPYC VM this was written on, where sysfs says 32 MiB).
std::uint64_t last_level_cache_bytes() {
  for (const char* index : {"index3", "index2"}) {
    std::ifstream in(std::string("/sys/devices/system/cpu/cpu0/cache/") + index + "/size");
    std::uint64_t kib = 0;
    char unit = 0;
    if (in >> kib >> unit && unit == 'K') return kib << 10;
  }
  const long llc = std::max(sysconf(_SC_LEVEL3_CACHE_SIZE), sysconf(_SC_LEVEL2_CACHE_SIZE));
  return llc > 0 ? std::uint64_t(llc) : std::uint64_t(32) << 20;  // unknown: assume a large one
}

void print_derivation(std::ostream& out, const BenchPlan& p, const MemoryBandwidth& bw) {
  char line[400];
  const theory::Transport t = transport_of(p);
  std::snprintf(line, sizeof line,
                "# ceiling: memory bandwidth with %d threads at once, GB/s: read %.2f  write %.2f  copy %.2f  "
                "triad %.2f -> BW = the largest, %.2f\n",
                bw.threads, bw.read / 1e9, bw.write / 1e9, bw.copy / 1e9, bw.triad / 1e9, bw.best() / 1e9);
  out << line;
  std::snprintf(line, sizeof line,
                "# ceiling: %s: least traffic %s; time >= traffic/BW, busbw = N/time·2(P-1)/P -> %.2f GB/s "
                "(sizes >= %llu B per rank, larger than the caches)\n",
                std::string(theory::transport_name(t)).c_str(),
                std::string(theory::all_reduce_traffic_formula(t)).c_str(), bench_ceiling_busbw(p, bw) / 1e9,
                static_cast<unsigned long long>(ceiling_min_bytes(p.P)));
  out << line;
}

}  // namespace

double bench_ceiling_busbw(const BenchPlan& p, const MemoryBandwidth& bw) {
  if (p.link.active()) return p.link.beta_Bps();  // busbw is normalized to a link's bandwidth
  if (p.coll != CollectiveKind::all_reduce) return 0;
  return theory::all_reduce_ceiling_busbw(transport_of(p), p.P, bw.best());
}

std::uint64_t ceiling_min_bytes(int P) { return 4 * last_level_cache_bytes() / (2 * std::uint64_t(std::max(1, P))); }

double print_ceiling_footer(std::ostream& out, const BenchPlan& p, const MemoryBandwidth& bw,
                            const nlohmann::json& rows) {
  const double ceiling = bench_ceiling_busbw(p, bw) / 1e9;
  if (ceiling <= 0) {
    out << "# no ceiling derived for " << collective_kind_name(p.coll) << " (all_reduce only)\n";
    return 0;
  }
  if (!p.link.active()) print_derivation(out, p, bw);
  double worst = 0;
  for (const auto& r : rows) {
    if (!p.link.active() && r["bytes"].get<std::uint64_t>() < ceiling_min_bytes(p.P)) continue;
    worst = std::max(worst, r["busbw_GBps"].get<double>() / ceiling);
  }
  char line[256];
  if (worst == 0)
    std::snprintf(line, sizeof line, "# ceiling %.2f GB/s: no row is large enough for it to apply\n", ceiling);
  else
    std::snprintf(line, sizeof line, "# best busbw where the ceiling applies = %.0f%% of the ceiling %.2f GB/s%s\n",
                  100 * worst, ceiling, worst > 1 ? "  CEILING BUG: a measured run exceeds its bound" : "");
  out << line;
  return worst;
}

double ring_ceiling_busbw(int P, double bw) { return 2.0 * bw / (5.0 * std::max(1, P)); }

double ring_busbw_at_kernel_rates(int P, const MemoryBandwidth& bw) {
  if (bw.triad <= 0 || bw.copy <= 0) return 0;
  return 2.0 / (std::max(1, P) * (3.0 / bw.triad + 2.0 / bw.copy));
}

double print_ring_ceiling(std::ostream& out, const BenchPlan& p, const MemoryBandwidth& bw,
                          const nlohmann::json& rows) {
  if (p.link.active() || p.on_gpu || p.backend.kind != BackendKind::threads || p.coll != CollectiveKind::all_reduce)
    return 0;
  const double ceiling = ring_ceiling_busbw(p.P, bw.best()) / 1e9, at_copy = ring_ceiling_busbw(p.P, bw.copy) / 1e9;
  double best = 0;
  for (const auto& r : rows)
    if (r["bytes"].get<std::uint64_t>() >= ceiling_min_bytes(p.P)) best = std::max(best, r["busbw_GBps"].get<double>());
  char line[320];
  std::snprintf(line, sizeof line,
                "# ring ceiling: traffic 5(P-1)·N (reduce-scatter reads 2 writes 1, all-gather reads 1 writes 1, per "
                "chunk) -> busbw <= 2·BW/(5P) = %.2f GB/s (%.2f at the copy rate)\n",
                ceiling, at_copy);
  out << line;
  if (best == 0) return 0;
  std::snprintf(line, sizeof line,
                "# best busbw where it applies = %.0f%% of the ring ceiling (%.0f%% at the copy rate)%s\n",
                100 * best / ceiling, 100 * best / at_copy,
                best > ceiling ? "  (above it: slices reread from cache, not memory)" : "");
  out << line;
  const double at_kernels = ring_busbw_at_kernel_rates(p.P, bw) / 1e9;
  std::snprintf(line, sizeof line,
                "# at the probe's own kernel rates (reduce-scatter steps as its triad, all-gather steps as its copy): "
                "busbw %.2f GB/s; best = %.0f%% of it\n",
                at_kernels, at_kernels > 0 ? 100 * best / at_kernels : 0.0);
  out << line;
  return best / ceiling;
}

}  // namespace dtl::cli
