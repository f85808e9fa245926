// The peer report's ceilings, DDP and tracing sections (declared in peer_tables.h).
#include <algorithm>
#include <cstdio>

#include "bench/peer_tables.h"
#include "core/theory/ceiling.h"

namespace dtl::peers {

namespace {

theory::Transport transport_of(const std::string& label) {
  return label.rfind("threads", 0) == 0 ? theory::Transport::shared_address_space
                                        : theory::Transport::mpi_shared_memory;
}

void print_ceiling_rows(std::ostream& out, const Results& r, int P, const Sweep& threads) {
  for (const Impl& i : all_reduce_impls()) {
    const auto impl = r.all_reduce.find(i.label);
    if (impl == r.all_reduce.end() || !impl->second.count(P)) continue;
    const double ceiling = theory::all_reduce_ceiling_busbw(transport_of(i.label), P, threads.memory_GBps);
    for (const auto& [bytes, v] : impl->second.at(P).busbw_GBps) {
      if (bytes < threads.ceiling_min_bytes) continue;
      std::vector<double> shares;
      for (double b : v) shares.push_back(100 * b / ceiling);
      const Stats s = stats_of(shares);
      out << "| " << P << " | " << bytes_label(bytes) << " | " << i.name << " | " << cell(stats_of(v)) << " | "
          << cell(Stats{ceiling, ceiling, ceiling, 1}) << " | " << cell(s, "%.0f") << " |"
          << (s.max > 100 ? " **CEILING BUG: over 100 %** |" : " |") << "\n";
    }
  }
}

}  // namespace

void print_ceilings(std::ostream& out, const Results& r) {
  const auto lib = r.all_reduce.find("threads-library");
  if (lib == r.all_reduce.end()) return;
  out << "Ceilings (a bound no run may exceed). BW = the largest of read, write, copy and triad rates "
         "(STREAM counting) measured by P threads at once in the dtlab threads runs, best over repeats.\n"
         "- threads (one address space): least traffic 2·P·N (each input read once, each output written once) "
         "-> time >= 2PN/BW -> busbw <= (P-1)/P²·BW.\n"
         "- processes (Open MPI shared memory, also gloo over loopback): each of P ranks receives >= 2(P-1)/P·N and "
         "every received byte is copied at least once (read + write) -> traffic >= 4(P-1)·N -> busbw <= BW/(2P). "
         "Assumes single-copy (CMA) transfers, the cheapest path Open MPI's sm/vader offers.\n"
         "- only sizes whose P inputs and outputs exceed 4× the last-level cache (smaller ones run from cache).\n\n";
  for (const auto& [P, sweep] : lib->second) {
    char line[200];
    std::snprintf(line, sizeof line,
                  "P = %d: BW = %.2f GB/s -> threads ceiling %.2f GB/s, processes ceiling %.2f GB/s\n", P,
                  sweep.memory_GBps,
                  theory::all_reduce_ceiling_busbw(theory::Transport::shared_address_space, P, sweep.memory_GBps),
                  theory::all_reduce_ceiling_busbw(theory::Transport::mpi_shared_memory, P, sweep.memory_GBps));
    out << line;
  }
  out << "\n| ranks | size | implementation | busbw GB/s | ceiling GB/s | % of ceiling | "
         "|\n|---|---|---|---|---|---|---|\n";
  for (const auto& [P, sweep] : lib->second) print_ceiling_rows(out, r, P, sweep);
  out << "\n";
}

void print_ddp_table(std::ostream& out, const Results& r) {
  if (r.ddp.empty()) return;
  out << "DDP training step (bucketed, same MLP, AdamW, global batch split over ranks), ms, median [min–max] over "
         "runs\n\n"
         "| ranks | dtlab threads | dtlab mpi | PyTorch DDP gloo | dtlab threads / PyTorch | dtlab mpi / PyTorch |\n"
         "|---|---|---|---|---|---|\n";
  std::vector<int> ranks;
  for (const auto& [label, by_p] : r.ddp)
    for (const auto& [P, s] : by_p) ranks.push_back(P);
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  auto get = [&](const std::string& label, int P) {
    const auto it = r.ddp.find(label);
    if (it == r.ddp.end() || !it->second.count(P)) return Stats{};
    Stats s = it->second.at(P);
    s.median *= 1e3, s.min *= 1e3, s.max *= 1e3;
    return s;
  };
  auto ratio = [](const Stats& a, const Stats& b) {  // medians; the range pairs extremes
    return a.n && b.n ? Stats{a.median / b.median, a.min / b.max, a.max / b.min, 2} : Stats{};
  };
  for (int P : ranks) {
    const Stats t = get("dtlab-threads", P), m = get("dtlab-mpi", P), py = get("pytorch", P);
    out << "| " << P << " | " << cell(t) << " | " << cell(m) << " | " << cell(py) << " | " << cell(ratio(t, py), "%.2f")
        << " | " << cell(ratio(m, py), "%.2f") << " |\n";
  }
  out << "\n";
}

void print_tracing(std::ostream& out, const Results& r) {
  if (!r.trace.count("on") || !r.trace.count("off")) return;
  for (const auto& [P, on] : r.trace.at("on")) {
    if (!r.trace.at("off").count(P)) continue;
    const Sweep& off = r.trace.at("off").at(P);
    for (const auto& [bytes, v] : on.busbw_GBps) {
      if (!off.busbw_GBps.count(bytes)) continue;
      out << "Tracing overhead, threads library, P = " << P << ", " << bytes_label(bytes)
          << ": busbw traced / untraced = " << cell(stats_of(paired_ratios(v, off.busbw_GBps.at(bytes))), "%.3f")
          << " (1.000 = free; goal >= 0.97)\n";
    }
  }
  out << "\n";
}

}  // namespace dtl::peers
