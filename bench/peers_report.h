// The peer report of bench/peers.sh, from the results folder it fills (peer_results.h):
// all-reduce busbw of dtlab and its peers with paired ratios, the DDP step against PyTorch
// DDP and the DDP step vs ranks and link, the ceilings with their derivation (a run over
// one is called a ceiling bug), α–β fitted to the collective sweeps with the crossovers and
// to the point-to-point sweeps with the ring all-reduce they predict, tracing's cost, the
// skipped peers; with a plot folder, the charts (busbw vs size with the ceilings, α–β fit
// with crossovers, point-to-point fit, DDP step vs ranks and link).
#pragma once

#include <ostream>
#include <string>

namespace dtl::peers {

// Returns 0; throws dtl::Error on a malformed results file or an unwritable chart.
int report(const std::string& results_dir, const std::string& plot_dir, std::ostream& out);

}  // namespace dtl::peers
