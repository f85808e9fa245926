// The peer report's point-to-point section: α and β fitted by least squares to each
// backend's ping-pong sweep (dtlab bench ping_pong, one way = round trip / 2), beside the
// ones fitted to its collective sweeps, and the ring all-reduce each predicts,
// 2(P-1)·α + 2(P-1)/P·N·β, against the one measured, size by size.
#pragma once

#include <map>
#include <ostream>
#include <string>

#include "bench/peer_results.h"
#include "core/theory/alpha_beta_fit.h"

namespace dtl::peers {

// Backend ("threads", "link", "mpi") → α–β fitted to its ping-pong medians (the sweep on
// the fewest ranks); backends with fewer than two sizes are left out.
std::map<std::string, theory::AlphaBetaFit> point_to_point_fits(const Results& r);

void print_point_to_point(std::ostream& out, const Results& r);

// One-way time vs size per backend with its fit, and the ring all-reduce measured beside
// the one predicted from the fit. Returns false (nothing written) without ping-pong sweeps.
bool plot_point_to_point(const Results& r, const std::string& path);

}  // namespace dtl::peers
