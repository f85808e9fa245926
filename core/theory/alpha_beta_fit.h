// α–β fitted from measurements: least squares of measured time against the curriculum's
// cost formulas (collectives.h), time = steps·α + critical-path bytes·β, where β is
// seconds per byte (1 / bandwidth). The fit minimizes relative error, Σ((model - t)/t)²,
// so a 1 KiB all-reduce counts as much as a 64 MiB one.
#pragma once

#include <optional>
#include <vector>

#include "core/theory/collectives.h"

namespace dtl::theory {

struct TimedRun {
  AlgorithmKind algo = AlgorithmKind::ring;
  int P = 2;
  double bytes = 0;   // N, the vector each rank all-reduces
  double time_s = 0;  // measured
};

struct AlphaBetaFit {
  double alpha_s = 0, beta_s_per_byte = 0;
  double max_rel_error = 0, rms_rel_error = 0;  // over the runs fitted
  Link link() const { return {alpha_s, beta_s_per_byte > 0 ? 1.0 / beta_s_per_byte : 0}; }
};

// The two terms of an algorithm's α–β time: sequential steps, and bytes on the critical
// path (all_reduce_cost's time with α = 1, β = ∞ and with α = 0, β = 1).
double latency_steps(AlgorithmKind a, int P, double N);
double critical_bytes(AlgorithmKind a, int P, double N);

// Least squares over `runs` (at least two, with different step/byte ratios); α and β are
// kept >= 0 (a negative one is set to 0 and the other refitted).
AlphaBetaFit fit_alpha_beta(const std::vector<TimedRun>& runs);

// Relative error of the fitted model on one run: (predicted - measured) / measured.
double fit_error(const AlphaBetaFit& f, const TimedRun& r);

// One point-to-point message of `bytes`, one way (a ping-pong's round trip / 2): the
// curriculum's time = α + bytes·β with nothing else in it.
struct TimedMessage {
  double bytes = 0;
  double time_s = 0;  // measured
};

// The same least squares of relative error over messages (at least two, of different
// sizes); α and β kept >= 0 as above.
AlphaBetaFit fit_point_to_point(const std::vector<TimedMessage>& messages);
double fit_error(const AlphaBetaFit& f, const TimedMessage& m);

// The size N > 0 where `a` and `b` take the same time under `link` (a is faster above it
// when a has more steps and fewer bytes), or nullopt when one is never slower.
std::optional<double> predicted_crossover(AlgorithmKind a, AlgorithmKind b, int P, Link link);

}  // namespace dtl::theory
