#include "core/theory/alpha_beta_fit.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace dtl::theory {

double latency_steps(AlgorithmKind a, int P, double N) {
  return all_reduce_cost(a, P, N, Link{1.0, std::numeric_limits<double>::infinity()}).time_s;
}

double critical_bytes(AlgorithmKind a, int P, double N) { return all_reduce_cost(a, P, N, Link{0.0, 1.0}).time_s; }

namespace {

// One run as a row of the relative least-squares system: [steps/t, bytes/t] · [α, β] ≈ 1.
struct Row {
  double x1, x2;
};

Row row_of(const TimedRun& r) {
  return {latency_steps(r.algo, r.P, r.bytes) / r.time_s, critical_bytes(r.algo, r.P, r.bytes) / r.time_s};
}

// Solves the 2×2 normal equations; a coefficient that comes out negative is pinned to 0
// and the other fitted alone.
AlphaBetaFit solve(const std::vector<Row>& rows) {
  double s11 = 0, s12 = 0, s22 = 0, b1 = 0, b2 = 0;
  for (const Row& r : rows) { s11 += r.x1 * r.x1, s12 += r.x1 * r.x2, s22 += r.x2 * r.x2, b1 += r.x1, b2 += r.x2; }
  AlphaBetaFit f;
  const double det = s11 * s22 - s12 * s12;
  const bool solved = std::abs(det) > 1e-12 * s11 * s22;  // not when the rows are (nearly) collinear
  if (solved) {
    f.alpha_s = (b1 * s22 - b2 * s12) / det;
    f.beta_s_per_byte = (s11 * b2 - s12 * b1) / det;
  }
  if (f.alpha_s < 0 || !solved) f = {0, s22 > 0 ? b2 / s22 : 0};
  if (f.beta_s_per_byte < 0 || !(f.alpha_s > 0 || f.beta_s_per_byte > 0)) f = {s11 > 0 ? b1 / s11 : 0, 0};
  return f;
}

// The fit and its errors over the rows of `samples` (each with a time_s).
template <class Sample>
AlphaBetaFit fit_rows(const std::vector<Sample>& samples, const std::vector<Row>& rows) {
  AlphaBetaFit f = solve(rows);
  double sum_sq = 0;
  for (const Sample& s : samples) {
    const double e = fit_error(f, s);
    f.max_rel_error = std::max(f.max_rel_error, std::abs(e));
    sum_sq += e * e;
  }
  f.rms_rel_error = std::sqrt(sum_sq / double(samples.size()));
  return f;
}

}  // namespace

double fit_error(const AlphaBetaFit& f, const TimedRun& r) {
  const double predicted =
      f.alpha_s * latency_steps(r.algo, r.P, r.bytes) + f.beta_s_per_byte * critical_bytes(r.algo, r.P, r.bytes);
  return (predicted - r.time_s) / r.time_s;
}

AlphaBetaFit fit_alpha_beta(const std::vector<TimedRun>& runs) {
  if (runs.size() < 2) throw UsageError("an α–β fit needs at least two timed runs");
  std::vector<Row> rows;
  for (const TimedRun& r : runs) {
    if (!(r.time_s > 0) || r.P < 2) throw UsageError("an α–β fit needs positive times on 2 or more ranks");
    rows.push_back(row_of(r));
  }
  return fit_rows(runs, rows);
}

double fit_error(const AlphaBetaFit& f, const TimedMessage& m) {
  return (f.alpha_s + f.beta_s_per_byte * m.bytes - m.time_s) / m.time_s;
}

AlphaBetaFit fit_point_to_point(const std::vector<TimedMessage>& messages) {
  if (messages.size() < 2) throw UsageError("an α–β fit needs at least two timed messages");
  std::vector<Row> rows;
  for (const TimedMessage& m : messages) {
    if (!(m.time_s > 0) || !(m.bytes >= 0)) throw UsageError("an α–β fit needs positive times and sizes >= 0");
    rows.push_back({1.0 / m.time_s, m.bytes / m.time_s});  // [1/t, n/t] · [α, β] ≈ 1
  }
  return fit_rows(messages, rows);
}

std::optional<double> predicted_crossover(AlgorithmKind a, AlgorithmKind b, int P, Link link) {
  if (link.beta_Bps <= 0) return std::nullopt;
  const double steps_gap = latency_steps(a, P, 1) - latency_steps(b, P, 1);    // α terms: a - b
  const double bytes_gap = critical_bytes(b, P, 1) - critical_bytes(a, P, 1);  // per byte of N: b - a
  if (steps_gap <= 0 || bytes_gap <= 0) return std::nullopt;                   // a is never slower, or never faster
  return link.alpha_s * steps_gap * link.beta_Bps / bytes_gap;
}

}  // namespace dtl::theory
