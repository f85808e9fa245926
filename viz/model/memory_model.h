// What the memory view draws, plain code so tests can check it: each rank's bytes by tag
// at the cursor's time, each rank's peak, and the lab's formula for bytes per rank from the
// trace's metadata ("predicted_bytes_per_rank", and "predicted_bytes_formula" to name it:
// DDP's "16 B/param x 164672 params"; ZeRO's 16 / 4+12/N / 2+14/N / 16/N bytes per param).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "viz/model/trace_data.h"

namespace dtl::viz {

struct MemoryPicture {
  std::vector<MemorySample> now;    // per rank: bytes by tag at t (its last sample at or before t)
  std::vector<std::uint64_t> peak;  // per rank: the largest total over the whole run
  double formula = 0;               // predicted bytes per rank, 0 when the lab gives none
  std::string formula_text;         // how the lab got it, or ""
  double largest() const;           // the largest peak or the formula: what the axis must reach
};

MemoryPicture memory_at(const TraceData& d, std::int64_t t);

}  // namespace dtl::viz
