#include "bench/peer_p2p.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "bench/peer_fit.h"
#include "bench/peer_tables.h"
#include "bench/plot_chart.h"

namespace dtl::peers {

namespace {

constexpr int kRingRanks = 4;  // the collective fit sweeps' rank count (bench/peers.sh)

// Backends in the order the report shows them; others after, by name.
std::vector<std::string> backends_of(const Results& r) {
  std::vector<std::string> out;
  for (const char* b : {"threads", "link", "mpi"})
    if (r.p2p.count(b)) out.push_back(b);
  for (const auto& [b, by_p] : r.p2p)
    if (std::find(out.begin(), out.end(), b) == out.end()) out.push_back(b);
  return out;
}

const Sweep* p2p_sweep(const Results& r, const std::string& backend) {
  const auto it = r.p2p.find(backend);
  return it == r.p2p.end() || it->second.empty() ? nullptr : &it->second.begin()->second;
}

// The measured ring all-reduce of a backend (in place, median per size), or null.
const Sweep* ring_sweep(const Results& r, const std::string& backend) {
  const auto it = r.fit.find(backend + "-ring");
  return it == r.fit.end() || !it->second.count(kRingRanks) ? nullptr : &it->second.at(kRingRanks);
}

// Microseconds to 3 significant digits, without an exponent (70800, 564, 19.7, 0.427).
std::string us(double v) { return v >= 1000 ? fixed("%.0f", v) : fixed("%.3g", v); }
std::string us_cell(const Stats& s) {
  if (s.n == 0) return "—";
  return s.n == 1 ? us(s.median) : us(s.median) + " [" + us(s.min) + "–" + us(s.max) + "]";
}

std::string bandwidth_of(const theory::AlphaBetaFit& f) {
  return f.beta_s_per_byte > 0 ? fixed("%.2f", 1e-9 / f.beta_s_per_byte) : "∞";
}

void print_fit_row(std::ostream& out, const std::string& backend, const std::string& from,
                   const theory::AlphaBetaFit& f) {
  out << "| " << backend << " | " << from << " | " << fixed("%.2f", f.alpha_s * 1e6) << " | " << bandwidth_of(f)
      << " | " << fixed("%.0f", 100 * f.rms_rel_error) << "% | " << fixed("%.0f", 100 * f.max_rel_error) << "% |\n";
}

void print_one_way_table(std::ostream& out, const Results& r, const std::vector<std::string>& backends) {
  std::vector<double> sizes;
  for (const auto& b : backends)
    for (const auto& [bytes, t] : p2p_sweep(r, b)->time_s) sizes.push_back(bytes);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  out << "| size |";
  for (const auto& b : backends) out << " " << b << " one way, µs |";
  out << "\n|---|";
  for (std::size_t i = 0; i < backends.size(); ++i) out << "---|";
  out << "\n";
  for (double bytes : sizes) {
    out << "| " << bytes_label(bytes) << " |";
    for (const auto& b : backends) {
      const auto& t = p2p_sweep(r, b)->time_s;
      std::vector<double> one_way_us;
      if (t.count(bytes))
        for (double s : t.at(bytes)) one_way_us.push_back(s * 1e6);
      out << " " << us_cell(stats_of(one_way_us)) << " |";
    }
    out << "\n";
  }
  out << "\n";
}

// The ring all-reduce on kRingRanks, measured vs predicted from the point-to-point fit
// and from the collective fit; returns the worst |error| of the point-to-point prediction.
double print_prediction_rows(std::ostream& out, const std::string& backend, const Sweep& ring,
                             const theory::AlphaBetaFit& p2p, const std::optional<theory::AlphaBetaFit>& coll) {
  double worst = 0;
  for (const auto& [bytes, times] : ring.time_s) {
    std::vector<double> times_us;
    for (double t : times) times_us.push_back(t * 1e6);
    const Stats m = stats_of(times_us);
    const double from_p2p = theory::all_reduce_cost(AlgorithmKind::ring, kRingRanks, bytes, p2p.link()).time_s * 1e6;
    const double e = (from_p2p - m.median) / m.median;
    worst = std::max(worst, std::abs(e));
    out << "| " << backend << " | " << bytes_label(bytes) << " | " << us_cell(m) << " | " << us(from_p2p) << " | "
        << fixed("%+.0f%%", 100 * e) << " |";
    if (coll) {
      const double from_coll =
          theory::all_reduce_cost(AlgorithmKind::ring, kRingRanks, bytes, coll->link()).time_s * 1e6;
      out << " " << us(from_coll) << " | " << fixed("%+.0f%%", 100 * (from_coll - m.median) / m.median) << " |\n";
    } else {
      out << " — | — |\n";
    }
  }
  return worst;
}

}  // namespace

std::map<std::string, theory::AlphaBetaFit> point_to_point_fits(const Results& r) {
  std::map<std::string, theory::AlphaBetaFit> fits;
  for (const auto& [backend, by_p] : r.p2p) {
    std::vector<theory::TimedMessage> messages;
    for (const auto& [bytes, t] : p2p_sweep(r, backend)->time_s) messages.push_back({bytes, stats_of(t).median});
    if (messages.size() >= 2) fits[backend] = theory::fit_point_to_point(messages);
  }
  return fits;
}

void print_point_to_point(std::ostream& out, const Results& r) {
  const auto fits = point_to_point_fits(r);
  std::vector<std::string> backends;
  for (const auto& b : backends_of(r))
    if (fits.count(b)) backends.push_back(b);
  if (backends.empty()) return;
  out << "Point-to-point (dtlab bench ping_pong, rank 0 <-> rank 1 of 2: blocking send/recv; one way = round trip / 2, "
         "mean of the timed round trips; median [min–max] over repeats). \"link\": thread ranks on the emulated link "
         "of "
         "the fit sweeps below\n\n";
  print_one_way_table(out, r, backends);
  out << "α–β per backend: from point-to-point, least squares of relative error to one way = α + N·β; from the "
         "collectives, the joint fit of the naive, tree, ring and rhd sweeps on "
      << kRingRanks
      << " ranks (above)\n\n| backend | fitted to | α µs | 1/β GB/s | error rms | error max "
         "|\n|---|---|---|---|---|---|\n";
  for (const auto& b : backends) {
    print_fit_row(out, b, "point-to-point, 2 ranks", fits.at(b));
    if (const auto coll = collective_fit(r, b, kRingRanks))
      print_fit_row(out, b, "all-reduce sweeps, " + std::to_string(kRingRanks) + " ranks", *coll);
  }
  out << "\nRing all-reduce, " << kRingRanks
      << " ranks, in place: measured vs predicted, 2(P-1)·α + 2(P-1)/P·N·β, with "
         "the point-to-point α–β and with the collective fit's (µs; error = predicted / measured - 1)\n\n"
         "| backend | size | measured µs | from point-to-point µs | error | from collective fit µs | error |\n"
         "|---|---|---|---|---|---|---|\n";
  std::vector<std::string> verdicts;
  for (const auto& b : backends)
    if (const Sweep* ring = ring_sweep(r, b)) {
      const double worst = print_prediction_rows(out, b, *ring, fits.at(b), collective_fit(r, b, kRingRanks));
      verdicts.push_back(b + ": the point-to-point α–β predicts the ring within " + fixed("%.0f", 100 * worst) +
                         "% at every size (" + (worst <= 0.2 ? "within" : "over") + " the 20% target)");
    }
  out << "\n";
  for (const auto& v : verdicts) out << v << "\n";
  out << "\n";
}

bool plot_point_to_point(const Results& r, const std::string& path) {
  const auto fits = point_to_point_fits(r);
  if (fits.empty()) return false;
  plot::LineChart ch;
  ch.title = "ping-pong one way and " + std::to_string(kRingRanks) +
             "-rank ring all-reduce; dashed: alpha-beta fitted to ping-pong";
  ch.x_label = "bytes (message; all-reduce: per rank)";
  ch.y_label = "time (s)";
  int i = 0;
  for (const auto& b : backends_of(r)) {
    if (!fits.count(b)) continue;
    const theory::AlphaBetaFit& f = fits.at(b);
    plot::Series meas{b + " p2p", {}, {}, plot::palette(i)},
        model{b + " p2p fit", {}, {}, plot::palette(i), true, false};
    for (const auto& [bytes, t] : p2p_sweep(r, b)->time_s) {
      meas.x.push_back(bytes), meas.y.push_back(stats_of(t).median);
      model.x.push_back(bytes), model.y.push_back(f.alpha_s + f.beta_s_per_byte * bytes);
    }
    ch.series.push_back(meas), ch.series.push_back(model);
    if (const Sweep* ring = ring_sweep(r, b)) {
      plot::Series rm{b + " ring", {}, {}, plot::palette(i + 5)},
          rp{b + " ring from p2p", {}, {}, plot::palette(i + 5), true, false};
      for (const auto& [bytes, t] : ring->time_s) {
        rm.x.push_back(bytes), rm.y.push_back(stats_of(t).median);
        rp.x.push_back(bytes),
            rp.y.push_back(theory::all_reduce_cost(AlgorithmKind::ring, kRingRanks, bytes, f.link()).time_s);
      }
      ch.series.push_back(rm), ch.series.push_back(rp);
    }
    ++i;
  }
  plot::write_chart_png(ch, path, 1200, 700);
  return true;
}

}  // namespace dtl::peers
