#include "bench/peer_scaling.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <vector>

#include "bench/peer_p2p.h"
#include "bench/peer_tables.h"
#include "bench/plot_chart.h"
#include "core/theory/collectives.h"

namespace dtl::peers {

namespace {

struct LinkRuns {
  std::string name;  // "none", "pcie4", "pcie4/100"
  const std::map<int, DdpPoint>* runs;
  std::optional<theory::Link> link;  // α–β the formula uses; none when unknown
  std::string link_text;             // "5 µs, 32 GB/s"
};

// Links fastest first (none, then by bandwidth), each with the α–β its formula uses.
std::vector<LinkRuns> links_of(const Results& r) {
  const auto p2p = point_to_point_fits(r);
  std::vector<LinkRuns> out;
  for (const auto& [label, runs] : r.ddp_scaling) {
    const DdpPoint& any = runs.begin()->second;
    LinkRuns l{any.link_name.empty() || any.link_GBps <= 0 ? "none" : any.link_name, &runs, std::nullopt, ""};
    if (any.link_GBps > 0) {
      l.link = theory::Link{any.link_latency_us * 1e-6, any.link_GBps * 1e9};
      l.link_text = fixed("%g µs, ", any.link_latency_us) + fixed("%g GB/s", any.link_GBps);
    } else if (p2p.count("threads")) {
      l.link = p2p.at("threads").link();
      l.link_text =
          "memory: fitted " + fixed("%.3g µs, ", l.link->alpha_s * 1e6) + fixed("%.3g GB/s", l.link->beta_Bps / 1e9);
    } else {
      l.link_text = "memory";
    }
    out.push_back(l);
  }
  auto bw = [](const LinkRuns& l) {
    return l.runs->begin()->second.link_GBps > 0 ? l.runs->begin()->second.link_GBps : 1e300;
  };
  std::stable_sort(out.begin(), out.end(), [&](const LinkRuns& a, const LinkRuns& b) { return bw(a) > bw(b); });
  return out;
}

// t1: the median over every run of the 1-rank step each measured on the global batch.
double one_rank_step(const Results& r) {
  std::vector<double> v;
  for (const auto& [label, runs] : r.ddp_scaling)
    for (const auto& [P, d] : runs)
      if (d.one_rank_s.n > 0) v.push_back(d.one_rank_s.median);
  return stats_of(v).median;
}

double grad_bytes(const Results& r) {
  for (const auto& [label, runs] : r.ddp_scaling)
    for (const auto& [P, d] : runs)
      if (d.grad_bytes > 0) return d.grad_bytes;
  return 0;
}

double formula(double t1, int P, double G, const theory::Link& link) {
  return t1 / P + (P > 1 ? theory::ring_all_reduce_time(P, G, link) : 0.0);
}

std::vector<int> ranks_of(const Results& r) {
  std::vector<int> ranks;
  for (const auto& [label, runs] : r.ddp_scaling)
    for (const auto& [P, d] : runs) ranks.push_back(P);
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

}  // namespace

void print_ddp_scaling(std::ostream& out, const Results& r) {
  if (r.ddp_scaling.empty()) return;
  const double t1 = one_rank_step(r), G = grad_bytes(r);
  const std::vector<int> ranks = ranks_of(r);
  out << "DDP step vs ranks and link (dtlab run ddp, bucketed, thread ranks, the MLP above; ms, median [min–max] over "
         "runs). Formula: t1/P + 2(P-1)·α + 2(P-1)/P·G·β, the ring all-reduce of the gradients not overlapped, with t1 "
         "= "
      << fixed("%.2f", t1 * 1e3)
      << " ms (1 rank on the global batch, median over the runs) and G = " << fixed("%.2f", G / 1e6)
      << " MB; ideal t1/P\n\n| link | α, 1/β |";
  for (int P : ranks) out << " " << P << (P == 1 ? " rank" : " ranks") << " |";
  for (int P : ranks)
    if (P > 1) out << " formula, " << P << " |";
  out << "\n|---|---|";
  for (int P : ranks) out << (P > 1 ? "---|---|" : "---|");
  out << "\n";
  for (const LinkRuns& l : links_of(r)) {
    out << "| " << l.name << " | " << l.link_text << " |";
    for (int P : ranks) {
      Stats s = l.runs->count(P) ? l.runs->at(P).step_s : Stats{};
      s.median *= 1e3, s.min *= 1e3, s.max *= 1e3;
      out << " " << cell(s) << " |";
    }
    for (int P : ranks)
      if (P > 1)
        out << " " << (l.link && t1 > 0 ? fixed("%.3g", formula(t1, P, G, *l.link) * 1e3) : std::string("—")) << " |";
    out << "\n";
  }
  out << "| ideal t1/P | |";
  for (int P : ranks) out << " " << fixed("%.3g", t1 / P * 1e3) << " |";
  for (int P : ranks)
    if (P > 1) out << " |";
  out << "\n\n";
}

bool plot_ddp_scaling(const Results& r, const std::string& path) {
  if (r.ddp_scaling.empty()) return false;
  const double t1 = one_rank_step(r), G = grad_bytes(r);
  const std::vector<int> ranks = ranks_of(r);
  plot::LineChart ch;
  ch.title = "DDP step time vs ranks and link (dtlab DDP lab, bucketed, thread ranks)";
  ch.x_label = "ranks";
  ch.y_label = "step time (ms)";
  ch.log_y = false;
  ch.x_tick = [](double v) { return fixed("%g", v); };
  for (int P : ranks) ch.x_ticks.push_back(P);
  int i = 0;
  for (const LinkRuns& l : links_of(r)) {
    plot::Series m{l.name, {}, {}, plot::palette(i)}, f{l.name + " formula", {}, {}, plot::palette(i), true, false};
    for (const auto& [P, d] : *l.runs) {
      m.x.push_back(P), m.y.push_back(d.step_s.median * 1e3);
      if (l.link && t1 > 0) f.x.push_back(P), f.y.push_back(formula(t1, P, G, *l.link) * 1e3);
    }
    ch.series.push_back(m);
    if (!f.x.empty()) ch.series.push_back(f);
    ++i;
  }
  if (t1 > 0) {
    plot::Series ideal{"ideal t1/P", {}, {}, {90, 90, 90}, true, false};
    for (int P : ranks) ideal.x.push_back(P), ideal.y.push_back(t1 / P * 1e3);
    ch.series.push_back(ideal);
  }
  plot::write_chart_png(ch, path);
  return true;
}

}  // namespace dtl::peers
