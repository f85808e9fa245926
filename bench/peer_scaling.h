// The peer report's DDP scaling section: dtlab's DDP lab (bucketed, thread ranks) at 1, 2
// and 4 ranks on each emulated link, against the ideal t1/P and the formula
// t1/P + ring all-reduce of the gradients on the link, 2(P-1)·α + 2(P-1)/P·G·β (no
// overlap; with no link, the α–β fitted to the threads ping-pong).
#pragma once

#include <ostream>
#include <string>

#include "bench/peer_results.h"

namespace dtl::peers {

void print_ddp_scaling(std::ostream& out, const Results& r);

// Step time vs ranks, a line per link, with the ideal and the formulas. Returns false
// (nothing written) without scaling runs.
bool plot_ddp_scaling(const Results& r, const std::string& path);

}  // namespace dtl::peers
