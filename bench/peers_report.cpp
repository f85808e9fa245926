// The peer report (peers_report.h): tables, footers and charts from a results folder.
#include "bench/peers_report.h"

#include <string>

#include "bench/peer_fit.h"
#include "bench/peer_p2p.h"
#include "bench/peer_results.h"
#include "bench/peer_scaling.h"
#include "bench/peer_tables.h"
#include "bench/plot_chart.h"
#include "core/error.h"
#include "core/theory/ceiling.h"

namespace dtl::peers {
namespace {

// busbw vs size on P ranks, one line per implementation, with the two ceilings.
bool plot_busbw(const Results& r, int P, const std::string& path) {
  plot::LineChart ch;
  ch.title = "all-reduce busbw, " + std::to_string(P) + " ranks, median of repeats";
  ch.x_label = "bytes per rank";
  ch.y_label = "busbw (GB/s)";
  int i = 0;
  for (const Impl& impl : all_reduce_impls()) {
    const auto it = r.all_reduce.find(impl.label);
    ++i;
    if (it == r.all_reduce.end() || !it->second.count(P)) continue;
    plot::Series s{impl.name, {}, {}, plot::palette(i - 1)};
    for (const auto& [bytes, v] : it->second.at(P).busbw_GBps) s.x.push_back(bytes), s.y.push_back(stats_of(v).median);
    ch.series.push_back(s);
  }
  if (ch.series.empty()) return false;
  const auto lib = r.all_reduce.find("threads-library");
  if (lib != r.all_reduce.end() && lib->second.count(P)) {
    const double bw = lib->second.at(P).memory_GBps;
    ch.title += "; ceilings apply from " + bytes_label(lib->second.at(P).ceiling_min_bytes);
    ch.horizontal.push_back({theory::all_reduce_ceiling_busbw(theory::Transport::shared_address_space, P, bw),
                             "ceiling, threads",
                             {200, 0, 0},
                             true});
    ch.horizontal.push_back({theory::all_reduce_ceiling_busbw(theory::Transport::mpi_shared_memory, P, bw),
                             "ceiling, processes",
                             {120, 120, 120},
                             true});
  }
  plot::write_chart_png(ch, path);
  return true;
}

void write_plots(const Results& r, const std::string& dir, std::ostream& out) {
  for (int P : {2, 4})
    if (plot_busbw(r, P, dir + "/peers-busbw-" + std::to_string(P) + "-ranks.png"))
      out << "wrote " << dir << "/peers-busbw-" << P << "-ranks.png\n";
  for (const char* backend : {"threads", "mpi", "link"})
    if (plot_alpha_beta(r, backend, 4, dir + "/peers-alpha-beta-" + backend + ".png"))
      out << "wrote " << dir << "/peers-alpha-beta-" << backend << ".png\n";
  if (plot_point_to_point(r, dir + "/peers-p2p-fit.png")) out << "wrote " << dir << "/peers-p2p-fit.png\n";
  if (plot_ddp_scaling(r, dir + "/peers-ddp-scaling.png")) out << "wrote " << dir << "/peers-ddp-scaling.png\n";
}

}  // namespace

int report(const std::string& dir, const std::string& plot_dir, std::ostream& out) {
  const Results r = load_results(dir);
  print_all_reduce_table(out, r);
  print_ddp_table(out, r);
  print_ddp_scaling(out, r);
  print_ceilings(out, r);
  print_alpha_beta(out, r);
  print_point_to_point(out, r);
  print_tracing(out, r);
  for (const std::string& s : r.skipped) out << "skipped: " << s << "\n";
  if (!plot_dir.empty()) write_plots(r, plot_dir, out);
  return 0;
}

}  // namespace dtl::peers
