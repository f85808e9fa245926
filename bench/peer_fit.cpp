#include "bench/peer_fit.h"

#include <cmath>
#include <cstdio>
#include <optional>
#include <vector>

#include "bench/plot_chart.h"
#include "core/error.h"
#include "core/theory/alpha_beta_fit.h"

namespace dtl::peers {

namespace {

const AlgorithmKind kAlgos[] = {AlgorithmKind::naive, AlgorithmKind::tree, AlgorithmKind::ring, AlgorithmKind::rhd};

// backend → P → algorithm → (bytes → median time)
using Measured = std::map<std::string, std::map<int, std::map<AlgorithmKind, std::map<double, double>>>>;

// A fit file's algorithm, in the vocabulary's names: one of the lab's (naive, ring, tree, rhd).
AlgorithmKind lab_algorithm(const std::string& word) {
  const std::optional<AlgorithmKind> a = parse_algorithm_kind(word);
  if (!a || *a == AlgorithmKind::none || *a == AlgorithmKind::library)
    throw UsageError("unknown algorithm '" + word + "'; use one of naive ring tree rhd");
  return *a;
}

Measured measured_times(const Results& r) {
  Measured m;
  for (const auto& [key, by_p] : r.fit) {
    const auto dash = key.find('-');
    if (dash == std::string::npos) continue;
    const AlgorithmKind a = lab_algorithm(key.substr(dash + 1));
    for (const auto& [P, sweep] : by_p)
      for (const auto& [bytes, t] : sweep.time_s) m[key.substr(0, dash)][P][a][bytes] = stats_of(t).median;
  }
  return m;
}

std::vector<theory::TimedRun> runs_of(const std::map<AlgorithmKind, std::map<double, double>>& by_algo, int P) {
  std::vector<theory::TimedRun> runs;
  for (const auto& [a, times] : by_algo)
    for (const auto& [bytes, t] : times) runs.push_back({a, P, bytes, t});
  return runs;
}

// The size above which `a` is measured faster than `b` at every larger size (log-interpolated
// between the two sizes around the switch); nullopt if `a` is not faster at the largest.
std::optional<double> measured_crossover(const std::map<double, double>& a, const std::map<double, double>& b) {
  std::optional<double> at;
  double prev_bytes = 0, prev_ratio = 0;
  for (const auto& [bytes, ta] : a) {
    if (!b.count(bytes)) continue;
    const double ratio = ta / b.at(bytes);
    if (ratio >= 1)
      at.reset();
    else if (!at)
      at = prev_bytes > 0 ? std::exp(std::log(prev_bytes) + std::log(bytes / prev_bytes) * std::log(prev_ratio) /
                                                                (std::log(prev_ratio) - std::log(ratio)))
                          : bytes;
    prev_bytes = bytes, prev_ratio = ratio;
  }
  return at;
}

void print_crossovers(std::ostream& out, const std::map<AlgorithmKind, std::map<double, double>>& by_algo, int P,
                      const theory::AlphaBetaFit& f) {
  for (AlgorithmKind a : kAlgos)
    for (AlgorithmKind b : kAlgos) {
      const auto predicted = theory::predicted_crossover(a, b, P, f.link());
      if (!predicted || !by_algo.count(a) || !by_algo.count(b)) continue;
      const auto measured = measured_crossover(by_algo.at(a), by_algo.at(b));
      out << "  " << algorithm_kind_name(a) << " beats " << algorithm_kind_name(b) << " above: predicted "
          << bytes_label(std::round(*predicted)) << ", measured "
          << (measured ? bytes_label(std::round(*measured)) : std::string("not within the sweep")) << "\n";
    }
}

// A sweep on an emulated link (dtlab bench --link-bw/--link-latency) knows the α and β
// the fit should find.
void print_emulated_link(std::ostream& out, const Results& r, const std::string& backend, int P) {
  for (const auto& [key, by_p] : r.fit)
    if (key.rfind(backend + "-", 0) == 0 && by_p.count(P) && by_p.at(P).link_GBps > 0) {
      char line[160];
      std::snprintf(line, sizeof line, "  (the emulated link: α = %.2f µs, 1/β = %.2f GB/s)\n",
                    by_p.at(P).link_latency_us, by_p.at(P).link_GBps);
      out << line;
      return;
    }
}

// One algorithm's worst error under the joint fit, and its own fit.
void print_algo_fit(std::ostream& out, AlgorithmKind a, int P, const std::map<double, double>& times,
                    const theory::AlphaBetaFit& joint) {
  double worst = 0;
  std::vector<theory::TimedRun> runs;
  for (const auto& [bytes, t] : times) {
    worst = std::max(worst, std::abs(theory::fit_error(joint, {a, P, bytes, t})));
    runs.push_back({a, P, bytes, t});
  }
  char line[256];
  std::snprintf(line, sizeof line, "  %-5s joint fit: max error %3.0f%%", std::string(algorithm_kind_name(a)).c_str(),
                100 * worst);
  out << line;
  if (runs.size() >= 2) {
    const theory::AlphaBetaFit alone = theory::fit_alpha_beta(runs);
    std::snprintf(line, sizeof line, "  | alone: α = %.2f µs, β = 1/(%.2f GB/s), max error %.0f%%", alone.alpha_s * 1e6,
                  alone.beta_s_per_byte > 0 ? 1e-9 / alone.beta_s_per_byte : 0.0, 100 * alone.max_rel_error);
    out << line;
  }
  out << "\n";
}

}  // namespace

void print_alpha_beta(std::ostream& out, const Results& r) {
  const Measured m = measured_times(r);
  if (m.empty()) return;
  out << "α–β fitted by least squares of relative error to time = steps·α + critical-path bytes·β "
         "(core/theory/collectives.h's formulas for naive, tree, ring, rhd; in-place times, median over the repeats). "
         "Joint: one α and β for "
         "all four algorithms, as the curriculum's model claims; alone: each algorithm fitted by itself (its formula's "
         "shape only)\n\n";
  for (const auto& [backend, by_p] : m)
    for (const auto& [P, by_algo] : by_p) {
      const theory::AlphaBetaFit f = theory::fit_alpha_beta(runs_of(by_algo, P));
      char line[256];
      std::snprintf(line, sizeof line,
                    "%s, P = %d: α = %.2f µs, β = 1/(%.2f GB/s); error rms %.0f%%, max %.0f%% (%s 20%%)\n",
                    backend.c_str(), P, f.alpha_s * 1e6, 1e-9 / f.beta_s_per_byte, 100 * f.rms_rel_error,
                    100 * f.max_rel_error, f.max_rel_error <= 0.2 ? "within" : "over");
      out << line;
      print_emulated_link(out, r, backend, P);
      for (const auto& [a, times] : by_algo) print_algo_fit(out, a, P, times, f);
      print_crossovers(out, by_algo, P, f);
    }
  out << "\n";
}

std::optional<theory::AlphaBetaFit> collective_fit(const Results& r, const std::string& backend, int P) {
  const Measured m = measured_times(r);
  if (!m.count(backend) || !m.at(backend).count(P)) return std::nullopt;
  const auto runs = runs_of(m.at(backend).at(P), P);
  if (runs.size() < 2) return std::nullopt;
  return theory::fit_alpha_beta(runs);
}

bool plot_alpha_beta(const Results& r, const std::string& backend, int P, const std::string& path) {
  const Measured m = measured_times(r);
  if (!m.count(backend) || !m.at(backend).count(P)) return false;
  const auto& by_algo = m.at(backend).at(P);
  const theory::AlphaBetaFit f = theory::fit_alpha_beta(runs_of(by_algo, P));
  plot::LineChart ch;
  ch.title = "all-reduce time, " + backend + ", " + std::to_string(P) + " ranks, in place: measured vs alpha-beta fit";
  ch.x_label = "bytes per rank";
  ch.y_label = "time (s)";
  int i = 0;
  for (const auto& [a, times] : by_algo) {
    plot::Series meas{std::string(algorithm_kind_name(a)) + " measured", {}, {}, plot::palette(i)};
    plot::Series model{std::string(algorithm_kind_name(a)) + " fit", {}, {}, plot::palette(i++), true, false};
    for (const auto& [bytes, t] : times) {
      meas.x.push_back(bytes), meas.y.push_back(t);
      model.x.push_back(bytes), model.y.push_back(theory::all_reduce_cost(a, P, bytes, f.link()).time_s);
    }
    ch.series.push_back(meas), ch.series.push_back(model);
  }
  const auto predicted = theory::predicted_crossover(AlgorithmKind::ring, AlgorithmKind::tree, P, f.link());
  const auto measured = by_algo.count(AlgorithmKind::ring) && by_algo.count(AlgorithmKind::tree)
                            ? measured_crossover(by_algo.at(AlgorithmKind::ring), by_algo.at(AlgorithmKind::tree))
                            : std::nullopt;
  if (predicted) ch.vertical.push_back({*predicted, "ring beats tree (fit)", {90, 90, 90}, true});
  if (measured) ch.vertical.push_back({*measured, "ring beats tree (measured)", {0, 0, 0}, false});
  plot::write_chart_png(ch, path);
  return true;
}

}  // namespace dtl::peers
