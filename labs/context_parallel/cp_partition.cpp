#include "labs/context_parallel/cp_partition.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "exercises/context_parallel.h"

namespace dtl::cp {

const char* cp_split_name(CpSplit s) { return s == CpSplit::zigzag ? "zigzag" : "contiguous"; }

void check_cp_split(CpSplit split, int seq, int ranks) {
  if (ranks < 1) throw UsageError("context parallelism needs at least 1 rank, got " + std::to_string(ranks));
  if (seq < 1)
    throw UsageError("context parallelism needs a sequence of at least 1 position, got " + std::to_string(seq));
  // zigzag cuts 2P chunks, contiguous P: every rank must get the same number of positions
  const int pieces = split == CpSplit::zigzag ? 2 * ranks : ranks;
  if (seq % pieces == 0) return;
  const int below = seq / pieces * pieces, above = below + pieces;
  throw UsageError("a " + std::string(cp_split_name(split)) + " split of " + std::to_string(seq) + " positions over " +
                   std::to_string(ranks) + " ranks needs the sequence length divisible by " + std::to_string(pieces) +
                   (split == CpSplit::zigzag ? " (2P chunks)" : " (P chunks)") + ": use " +
                   (below > 0 ? std::to_string(below) + " or " : std::string()) + std::to_string(above) +
                   " positions, or another number of ranks");
}

std::vector<int> cp_positions(CpSplit split, int seq, int ranks, int rank) {
  check_cp_split(split, seq, ranks);
  if (rank < 0 || rank >= ranks)
    throw Error("cp_positions: rank " + std::to_string(rank) + " is not in a group of " + std::to_string(ranks));
  std::vector<int> pos;
  if (split == CpSplit::contiguous) {
    const int n = seq / ranks;
    for (int p = rank * n; p < (rank + 1) * n; ++p) pos.push_back(p);
    return pos;
  }
  pos = ex::zigzag_partition(seq, ranks, rank);  // the learner's (exercises.h)
  // Checked before anything indexes with it: a mistake names the exercise.
  const bool fits = pos.size() == std::size_t(seq / ranks) &&
                    std::adjacent_find(pos.begin(), pos.end(), std::greater_equal<>()) == pos.end() &&
                    std::all_of(pos.begin(), pos.end(), [&](int p) { return p >= 0 && p < seq; });
  if (!fits)
    throw Error("zigzag_partition (your exercise) gave rank " + std::to_string(rank) + " " +
                std::to_string(pos.size()) + " positions, not " + std::to_string(seq / ranks) +
                " strictly ascending ones in 0.." + std::to_string(seq - 1) +
                ": dtlab grade --exercise zigzag_partition");
  return pos;
}

std::int64_t cp_causal_pairs(const std::vector<int>& positions) {
  std::int64_t pairs = 0;
  for (int p : positions) pairs += std::int64_t(p) + 1;  // keys 0..p
  return pairs;
}

CpBalance cp_balance(CpSplit split, int seq, int ranks) {
  CpBalance b;
  std::int64_t total = 0;
  for (int r = 0; r < ranks; ++r) {
    b.pairs.push_back(cp_causal_pairs(cp_positions(split, seq, ranks, r)));
    total += b.pairs.back();
  }
  const double mean = double(total) / double(ranks);
  b.max_over_mean = double(*std::max_element(b.pairs.begin(), b.pairs.end())) / mean;
  return b;
}

}  // namespace dtl::cp
