// The experts lab's exercises on crafted inputs against the lab's own brute force (routing.h).
// The lab's one-rank reference runs the same exercises, so a mistake they share (a router
// that picks the least likely experts, a send order never sorted, a combine that ignores the
// weights) passes it; these checks take their expected values from the definitions instead
// (issue 50: a lab never trusts the learner's output).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "labs/experts/routing.h"

namespace dtl::moe {

namespace {

constexpr int kTokens = 12, kExperts = 8, kTopK = 2, kRanks = 4, kHidden = 3;

std::size_t at(int row, int col, int width) { return std::size_t(row) * std::size_t(width) + std::size_t(col); }

// Distinct logits per token ((5t + 3e) mod 8 runs over 0..7 as e does), every third token's
// scaled by 40 so that a softmax without its max subtracted overflows.
std::vector<float> crafted_logits() {
  std::vector<float> l(std::size_t(kTokens) * kExperts);
  for (int t = 0; t < kTokens; ++t)
    for (int e = 0; e < kExperts; ++e)
      l[at(t, e, kExperts)] = float((5 * t + 3 * e) % kExperts - 3) * (t % 3 == 0 ? 40.0f : 0.7f);
  return l;
}

// A routing the lab writes itself: token t's choices 3t and 3t + 5 (mod 8), distinct;
// weights 0.6 and 0.4; every fifth slot from the fourth on dropped.
Routing crafted_routing(std::vector<std::uint8_t>& kept) {
  Routing r{kTokens, kExperts, kTopK, {}, {}, std::vector<float>(std::size_t(kTokens) * kExperts, 0.0f)};
  for (int t = 0; t < kTokens; ++t)
    for (int j = 0; j < kTopK; ++j) {
      r.expert.push_back((3 * t + 5 * j) % kExperts);
      r.weight.push_back(j == 0 ? 0.6f : 0.4f);
    }
  kept.clear();
  for (std::size_t slot = 0; slot < r.expert.size(); ++slot) kept.push_back(slot % 5 == 3 ? 0 : 1);
  return r;
}

// routing.h's layout by brute force: kept slots by expert, then slot (token) order; a rank
// holds E/ranks consecutive experts.
Dispatch brute_force_dispatch(const Routing& r, const std::vector<std::uint8_t>& kept, int ranks) {
  Dispatch d;
  d.ranks = ranks;
  d.tokens_to_rank.assign(std::size_t(ranks), 0);
  d.first_row_of_rank.assign(std::size_t(ranks), 0);
  d.tokens_per_expert.assign(std::size_t(r.experts), 0);
  for (int e = 0; e < r.experts; ++e)
    for (std::size_t slot = 0; slot < r.expert.size(); ++slot)
      if (kept[slot] && r.expert[slot] == e) {
        d.send_order.push_back(int(slot));
        ++d.tokens_per_expert[std::size_t(e)];
        ++d.tokens_to_rank[std::size_t(e / (r.experts / ranks))];
      }
  d.dropped = r.expert.size() - d.send_order.size();
  for (int q = 1; q < ranks; ++q)
    d.first_row_of_rank[std::size_t(q)] =
        d.first_row_of_rank[std::size_t(q - 1)] + d.tokens_to_rank[std::size_t(q - 1)];
  return d;
}

// Entries that differ, a missing or extra one counting as one.
template <typename T>
int differing(const std::vector<T>& got, const std::vector<T>& want) {
  int n = int(std::max(got.size(), want.size()) - std::min(got.size(), want.size()));
  for (std::size_t i = 0; i < std::min(got.size(), want.size()); ++i) n += got[i] != want[i];
  return n;
}

}  // namespace

int router_errors_on_crafted_logits() {
  const std::vector<float> logits = crafted_logits();
  const Routing r = route_top_k(logits.data(), kTokens, kExperts, kTopK);
  const std::size_t slots = std::size_t(kTokens) * kTopK;
  if (r.expert.size() != slots || r.weight.size() != slots) return int(slots);
  int errors = 0;
  for (int t = 0; t < kTokens; ++t) {
    std::vector<double> p(kExperts);  // the float64 softmax of the token's logits
    const float top =
        *std::max_element(logits.begin() + long(at(t, 0, kExperts)), logits.begin() + long(at(t, kExperts, kExperts)));
    double sum = 0;
    for (int e = 0; e < kExperts; ++e) sum += p[std::size_t(e)] = std::exp(double(logits[at(t, e, kExperts)] - top));
    std::vector<bool> taken(kExperts, false);
    for (int j = 0; j < kTopK; ++j) {  // the j-th largest (no ties: the logits are distinct)
      int best = -1;
      for (int e = 0; e < kExperts; ++e)
        if (!taken[std::size_t(e)] && (best < 0 || p[std::size_t(e)] > p[std::size_t(best)])) best = e;
      taken[std::size_t(best)] = true;
      const std::size_t slot = at(t, j, kTopK);
      errors += r.expert[slot] != best || std::fabs(double(r.weight[slot]) - p[std::size_t(best)] / sum) > 1e-6;
    }
  }
  return errors;
}

int dispatch_errors_on_crafted_routing() {
  std::vector<std::uint8_t> kept;
  const Routing r = crafted_routing(kept);
  const Dispatch got = plan_dispatch(r, kept, kRanks), want = brute_force_dispatch(r, kept, kRanks);
  return differing(got.send_order, want.send_order) + differing(got.tokens_to_rank, want.tokens_to_rank) +
         differing(got.first_row_of_rank, want.first_row_of_rank) +
         differing(got.tokens_per_expert, want.tokens_per_expert) + int(got.dropped != want.dropped);
}

double combine_error_on_crafted_rows() {
  std::vector<std::uint8_t> kept;
  const Routing r = crafted_routing(kept);
  const Dispatch d = brute_force_dispatch(r, kept, kRanks);  // the lab's layout, not the learner's
  std::vector<float> back(d.send_order.size() * kHidden), out(std::size_t(kTokens) * kHidden);
  for (std::size_t i = 0; i < back.size(); ++i) back[i] = 0.25f * float(i % 7) - 0.5f;
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = 0.125f * float(i % 5);  // the residual: kept
  std::vector<double> want(out.begin(), out.end());
  for (std::size_t i = 0; i < d.send_order.size(); ++i) {
    const int slot = d.send_order[i], token = slot / kTopK;
    for (int c = 0; c < kHidden; ++c)
      want[at(token, c, kHidden)] += double(r.weight[std::size_t(slot)]) * double(back[at(int(i), c, kHidden)]);
  }
  combine_rows(back.data(), kHidden, d, r, out.data());
  double worst = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const double err = std::fabs(double(out[i]) - want[i]);
    if (std::isnan(err)) return std::numeric_limits<double>::infinity();
    worst = std::max(worst, err);
  }
  return worst;
}

}  // namespace dtl::moe
