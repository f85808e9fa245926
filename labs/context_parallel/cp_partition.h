// How context parallelism cuts one sequence of S positions over the P ranks of a CP group
// (issue 32). Every rank holds the same number of positions, n = S/P, of every sequence of
// the batch, and keeps them in ascending order.
//
//   contiguous  rank i holds [i·S/P, (i+1)·S/P)                       (S divisible by P)
//   zigzag      the sequence cut into 2P chunks of c = S/(2P); rank i holds chunk i and
//               chunk 2P−1−i (Llama 3, Dubey et al. 2024 §3.3.2; torchtitan)  (S divisible by 2P)
//
// Why zigzag: under the causal mask a query at position p attends p+1 keys, so a rank's work
// grows with its positions. A rank's causal (query, key) pairs, per head and sequence:
//
//   contiguous  Σ_{p=i·n}^{(i+1)·n−1} (p+1) = i·n² + n(n+1)/2 ≈ (2i+1)·n²/2   (n = S/P)
//               the last rank does ≈ 2P−1 times the first's: max/mean ≈ (2P−1)/P → 2
//   zigzag      chunk j gives j·c² + c(c+1)/2, and chunks i and 2P−1−i together
//               (2P−1)·c² + c(c+1): the same on every rank, max/mean = 1
//
// Their sum over ranks is S(S+1)/2 in both cases: every pair is computed exactly once.
#pragma once

#include <cstdint>
#include <vector>

namespace dtl::cp {

enum class CpSplit : std::uint8_t { contiguous, zigzag };

const char* cp_split_name(CpSplit s);  // "contiguous", "zigzag"

// Throws UsageError when `seq` positions cannot be cut evenly over `ranks` in `split`
// (contiguous: S % P; zigzag: S % 2P), saying which sequence lengths would do.
void check_cp_split(CpSplit split, int seq, int ranks);

// The global positions rank `rank` holds, ascending (S/P of them). Checks as above.
std::vector<int> cp_positions(CpSplit split, int seq, int ranks, int rank);

// The causal (query, key ≤ query) pairs whose query is at one of `positions`, for one head
// of one sequence: Σ (p + 1). Exact.
std::int64_t cp_causal_pairs(const std::vector<int>& positions);

// Every rank's pairs and their imbalance: max / mean (1 = balanced).
struct CpBalance {
  std::vector<std::int64_t> pairs;  // per rank
  double max_over_mean = 1;
};
CpBalance cp_balance(CpSplit split, int seq, int ranks);

}  // namespace dtl::cp
