// The peer report's α–β section: per backend and rank count, α and β fitted by least
// squares (core/theory/alpha_beta_fit.h) to dtlab's sweeps of the naive, tree, ring and
// recursive halving–doubling all-reduce, the fit's error per algorithm, and each pair's
// crossover size predicted by the fitted formulas next to the one measured.
#pragma once

#include <optional>
#include <ostream>
#include <string>

#include "bench/peer_results.h"
#include "core/theory/alpha_beta_fit.h"

namespace dtl::peers {

void print_alpha_beta(std::ostream& out, const Results& r);

// The joint fit (all algorithms, one α and β) of one backend's sweeps on P ranks; nullopt
// when that backend has fewer than two timed sizes there.
std::optional<theory::AlphaBetaFit> collective_fit(const Results& r, const std::string& backend, int P);

// Measured times and fitted model of one backend on P ranks, with the crossovers marked.
// Returns false (nothing written) when that backend has no fit sweeps for P.
bool plot_alpha_beta(const Results& r, const std::string& backend, int P, const std::string& path);

}  // namespace dtl::peers
