#include "viz/model/memory_model.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace dtl::viz {

double MemoryPicture::largest() const {
  double m = std::isfinite(formula) ? std::max(0.0, formula) : 0.0;
  for (std::uint64_t p : peak) m = std::max(m, double(p));
  return m;
}

MemoryPicture memory_at(const TraceData& d, std::int64_t t) {
  MemoryPicture pic;
  const std::size_t P = std::size_t(std::max(0, d.ranks));
  pic.now.resize(P);
  pic.peak.assign(P, 0);
  for (std::size_t r = 0; r < P; ++r) pic.now[r].rank = int(r);
  for (const MemorySample& m : d.memory) {  // sorted by time
    if (m.rank < 0 || std::size_t(m.rank) >= P) continue;
    std::uint64_t total = 0;
    for (auto b : m.bytes) total += b;
    pic.peak[std::size_t(m.rank)] = std::max(pic.peak[std::size_t(m.rank)], total);
    if (m.t_ns <= t) pic.now[std::size_t(m.rank)] = m;
  }
  if (auto it = d.meta.find("predicted_bytes_per_rank"); it != d.meta.end()) {
    const double v = std::strtod(it->second.c_str(), nullptr);
    if (std::isfinite(v) && v > 0) pic.formula = v;
  }
  if (auto it = d.meta.find("predicted_bytes_formula"); it != d.meta.end() && pic.formula > 0)
    pic.formula_text = printable(it->second, 80);
  return pic;
}

}  // namespace dtl::viz
