// What the memory view draws, plain code so tests can check it: each rank's bytes by tag
// at the cursor's time, each rank's peak, and the lab's formula for bytes per rank from the
// trace's metadata ("predicted_bytes_per_rank", and "predicted_bytes_formula" to name it:
// DDP's "16 B/param x 164672 params"; ZeRO's 16 / 4+12/N / 2+14/N / 16/N bytes per param).
//
// A run of several phases with a formula each (ZeRO's `--stage all`: phase spans of roles
// zero_stage 0 .. 3, meta "phase_formula_bytes.<role key>" and "phase_formula_text.<role
// key>", the key core/trace/vocab.h's role_key, "zero_stage=2") gets
// one picture per phase instead: each rank's bytes by tag at its peak inside the phase,
// drawn side by side on one byte axis so the shrinking from stage to stage shows at a glance.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "viz/model/trace_data.h"

namespace dtl::viz {

struct MemoryPicture {
  std::vector<MemorySample> now;        // per rank: bytes by tag at t (its last sample at or before t)
  std::vector<std::uint64_t> peak;      // per rank: the largest total over the whole run
  double formula = 0;                   // predicted bytes per rank, 0 when the lab gives none
  std::vector<double> formula_of_rank;  // per rank, where ranks differ (meta predicted_bytes_of_rank.R; 0: none)
  std::string formula_text;             // how the lab got it, or ""
  double largest() const;               // the largest peak or the formula: what the axis must reach
};

MemoryPicture memory_at(const TraceData& d, std::int64_t t);

// One phase's picture: per rank, the bytes by tag at the moment its total peaked inside the
// phase (its spans of this role; a rank without one gets the phase's whole time range).
struct PhaseMemory {
  std::string label;  // the phase's label ("ZeRO-2"), made printable (its role key if no span has it)
  Role role;          // its spans' role (zero_stage 2: what it is, for code), empty if no span has it
  std::int64_t begin_ns = 0, end_ns = 0;  // earliest begin, latest end over all ranks
  bool in_trace = false;                  // some rank has a span of this role (or began one)
  bool in_progress = false;               // a live run is inside it: a rank began it, its span is not recorded yet
  std::vector<MemorySample> at_peak;      // per rank: the sample at its peak (t_ns: when)
  std::vector<std::uint64_t> peak;        // per rank: that sample's total
  double formula = 0;                     // the formula's bytes per rank; 0: none or malformed
  std::string formula_text;               // how the lab got it, or ""
};
struct PhaseMemories {
  std::vector<PhaseMemory> phases;  // in time order (phases not in the trace last)
  std::size_t dropped = 0;          // phases beyond kMaxMemoryPhases, not shown
  double largest() const;           // the largest peak or formula of all: the shared axis's reach
};
// Small multiples side by side stay readable up to about this many; a hostile trace's 65536
// meta keys do not become 65536 x ranks samples.
inline constexpr std::size_t kMaxMemoryPhases = 8;

// Empty when the trace's meta has no "phase_formula_bytes.*" key. O(samples x phases +
// spans log samples).
PhaseMemories memory_by_phase(const TraceData& d);

// A byte count from the metadata: a plain decimal number (digits, optional fraction and
// exponent, surrounding blanks), finite, > 0 and at most trace_limits::kMaxEventBytes x
// kMaxRanks; anything else gives 0 (no formula line), never an exception.
double parse_formula_bytes(const std::string& text);

}  // namespace dtl::viz
