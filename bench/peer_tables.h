// The peer report's tables (bench/peers.sh): all-reduce busbw of every implementation with
// dtlab/peer ratios, the honest ceilings, the DDP step, tracing's cost. Markdown, so
// docs/performance.md can hold the output as printed.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "bench/peer_results.h"

namespace dtl::peers {

struct Impl {
  std::string label, name;
};
const std::vector<Impl>& all_reduce_impls();  // in the table's column order

// Repeat k of `a` over repeat k of `b` (they ran side by side), for k < both counts.
std::vector<double> paired_ratios(const std::vector<double>& a, const std::vector<double>& b);
std::string cell(const Stats& s, const char* format = "%.3g");  // "median [min–max]", "—" when empty
std::string fixed(const char* format, double v);                // one number, printf's `format`

void print_all_reduce_table(std::ostream& out, const Results& r);
void print_ceilings(std::ostream& out, const Results& r);
void print_ddp_table(std::ostream& out, const Results& r);
void print_tracing(std::ostream& out, const Results& r);

}  // namespace dtl::peers
