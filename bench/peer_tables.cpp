#include "bench/peer_tables.h"

#include <algorithm>
#include <cstdio>

#include "core/theory/ceiling.h"

namespace dtl::peers {

const std::vector<Impl>& all_reduce_impls() {
  static const std::vector<Impl> impls = {
      {"threads-library", "dtlab threads library"}, {"threads-ring", "dtlab threads ring"},
      {"mpi-library", "dtlab mpi library"},         {"mpi-ring", "dtlab mpi ring"},
      {"MPI_Allreduce", "Open MPI MPI_Allreduce"},  {"gloo", "torch gloo"}};
  return impls;
}

std::vector<double> paired_ratios(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> out;
  for (std::size_t k = 0; k < std::min(a.size(), b.size()); ++k)
    if (b[k] > 0) out.push_back(a[k] / b[k]);
  return out;
}

std::string fixed(const char* format, double v) {
  char s[64];
  std::snprintf(s, sizeof s, format, v);
  return s;
}

std::string cell(const Stats& s, const char* format) {
  if (s.n == 0) return "—";
  char m[32], lo[32], hi[32], out[128];
  std::snprintf(m, sizeof m, format, s.median);
  if (s.n == 1) return m;
  std::snprintf(lo, sizeof lo, format, s.min);
  std::snprintf(hi, sizeof hi, format, s.max);
  std::snprintf(out, sizeof out, "%s [%s–%s]", m, lo, hi);
  return out;
}

namespace {

const std::vector<double>* values_at(const Results& r, const std::string& label, int P, double bytes) {
  const auto impl = r.all_reduce.find(label);
  if (impl == r.all_reduce.end() || !impl->second.count(P)) return nullptr;
  const auto& m = impl->second.at(P).busbw_GBps;
  const auto it = m.find(bytes);
  return it == m.end() ? nullptr : &it->second;
}

Stats ratio_at(const Results& r, const std::string& a, const std::string& b, int P, double bytes) {
  const auto* x = values_at(r, a, P, bytes);
  const auto* y = values_at(r, b, P, bytes);
  return x && y ? stats_of(paired_ratios(*x, *y)) : Stats{};
}

// Every (P, size) any implementation measured.
std::map<int, std::vector<double>> sizes_by_ranks(const Results& r) {
  std::map<int, std::vector<double>> out;
  for (const auto& [label, by_p] : r.all_reduce)
    for (const auto& [P, sweep] : by_p)
      for (const auto& [bytes, v] : sweep.busbw_GBps) out[P].push_back(bytes);
  for (auto& [P, v] : out) std::sort(v.begin(), v.end()), v.erase(std::unique(v.begin(), v.end()), v.end());
  return out;
}

}  // namespace

void print_all_reduce_table(std::ostream& out, const Results& r) {
  if (r.all_reduce.empty()) return;
  out << "All-reduce bus bandwidth, GB/s (float sum, out of place; median [min–max] over repeats; "
         "ratios paired repeat by repeat)\n\n| ranks | size |";
  for (const Impl& i : all_reduce_impls()) out << " " << i.name << " |";
  out << " threads lib / gloo | threads lib / MPI_Allreduce | dtlab mpi / MPI_Allreduce |\n|---|---|";
  for (std::size_t i = 0; i < all_reduce_impls().size() + 3; ++i) out << "---|";
  out << "\n";
  for (const auto& [P, sizes] : sizes_by_ranks(r))
    for (double bytes : sizes) {
      out << "| " << P << " | " << bytes_label(bytes) << " |";
      for (const Impl& i : all_reduce_impls()) {
        const auto* v = values_at(r, i.label, P, bytes);
        out << " " << (v ? cell(stats_of(*v)) : "—") << " |";
      }
      out << " " << cell(ratio_at(r, "threads-library", "gloo", P, bytes), "%.1f") << " | "
          << cell(ratio_at(r, "threads-library", "MPI_Allreduce", P, bytes), "%.1f") << " | "
          << cell(ratio_at(r, "mpi-library", "MPI_Allreduce", P, bytes), "%.2f") << " |\n";
    }
  out << "\n";
}

}  // namespace dtl::peers
