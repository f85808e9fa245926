// search(): every 3D configuration of a cluster that fits, fastest first, each with the
// reason it loses to the one above it.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "core/error.h"
#include "core/theory/plan.h"

namespace dtl::theory {

namespace {

std::string percent(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %%", 100 * v);
  return buf;
}

std::string gigabytes(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GB", v / 1e9);
  return buf;
}

// The part of the step where `slower` loses most time against `faster`, in words.
std::string why_slower(const Plan& faster, const Plan& slower) {
  const StepTime& a = faster.time;
  const StepTime& b = slower.time;
  if (b.total() <= a.total() * (1 + 1e-12))
    return "as fast, but " + gigabytes(slower.memory.total() - faster.memory.total()) + " more memory per GPU";
  struct Part {
    double delta;
    std::string words;
  };
  auto dp_words = [&] {
    bool inter = false;
    for (const auto& e : slower.ledger) inter = inter || (e.axis == Axis::dp && e.crosses_nodes);
    std::string w = std::string("more exposed ") + (inter ? "inter-node " : "") + "DP traffic";
    if (slower.config.zero >= 2 && slower.config.zero != faster.config.zero)
      w += " (ZeRO-" + std::to_string(slower.config.zero) + " communicates every micro-batch)";
    return w;
  };
  bool tp_inter = false;
  for (const auto& e : slower.ledger) tp_inter = tp_inter || (e.axis == Axis::tp && e.crosses_nodes);
  const Part parts[] = {
      {b.busy - a.busy, std::string("more recomputation (") + recompute_name(slower.config.recompute) + " vs " +
                            recompute_name(faster.config.recompute) + ")"},
      {b.bubble - a.bubble, "larger bubble (" + percent(slower.bubble) + " vs " + percent(faster.bubble) + ")"},
      {b.tp - a.tp, std::string("more exposed ") + (tp_inter ? "inter-node " : "") + "TP traffic"},
      {b.pp - a.pp, "more pipeline sends"},
      {b.dp - a.dp, dp_words()},
  };
  const Part* worst = &parts[0];
  for (const auto& p : parts)
    if (p.delta > worst->delta) worst = &p;
  return worst->words;
}

std::vector<int> divisors(int n) {
  std::vector<int> d;
  for (int i = 1; i <= n; ++i)
    if (n % i == 0) d.push_back(i);
  return d;
}

}  // namespace

std::string SearchRejections::words(int gpus, int global_batch) const {
  const std::string n = std::to_string(gpus), b = std::to_string(global_batch);
  if (memory > 0)
    return "every configuration that divides the model over " + n + " GPUs needs more memory than a GPU has (" +
           std::to_string(memory) + " tried): add GPUs, or memory per GPU";
  if (micro_batches > 0)
    return "the global batch " + b + " leaves fewer micro-batches than pipeline stages in every split of " + n +
           " GPUs: raise --global-batch";
  if (batch_rule > 0)
    return "the global batch " + b + " is not a multiple of dp·b for any split of " + n +
           " GPUs: give --global-batch a "
           "multiple of " +
           n + " (or of its divisors)";
  if (pp_rule > 0) return "no pipeline depth dividing " + n + " GPUs divides the layers: give another --search N";
  return "no tensor-parallel size fits: tp must divide the GPUs per node and the heads; give another --search N";
}

int search_global_batch(const SearchOptions& o, int gpus) {
  return o.global_batch > 0 ? o.global_batch : std::max(512, 2 * gpus);
}

std::vector<Ranked> search(const ModelSpec& m, const ClusterSpec& cluster, int gpus, const SearchOptions& o,
                           SearchRejections* why) {
  if (gpus < 1) throw UsageError("search needs at least 1 GPU (N), not " + std::to_string(gpus));
  if (!m.has_shape()) throw UsageError("search needs the model's shape (--layers --hidden --heads --seq)");
  ClusterSpec c = cluster;
  c.gpus = gpus;
  const int global_batch = search_global_batch(o, gpus);
  SearchRejections rejected;
  std::vector<Plan> fitting;
  for (int tp : divisors(gpus)) {
    if (tp > c.gpus_per_node || c.gpus_per_node % tp != 0 || m.heads % tp != 0) {
      ++rejected.tp_rule;
      continue;
    }
    for (int pp : divisors(gpus / tp)) {
      const int dp = gpus / tp / pp;
      const bool batch_divides = global_batch % (dp * o.micro_batch_size) == 0;
      const int M = batch_divides ? global_batch / (dp * o.micro_batch_size) : 0;
      int* broke = m.layers % pp != 0 ? &rejected.pp_rule
                   : !batch_divides   ? &rejected.batch_rule
                   : M < pp           ? &rejected.micro_batches  // 1F1B needs a micro-batch for every stage
                                      : nullptr;
      if (broke) {
        ++*broke;
        continue;
      }
      const std::size_t fitted_before = fitting.size();
      for (int zero = 0; zero <= (dp == 1 ? 0 : 3); ++zero)  // one rank: nothing to shard over
        for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full})
          if (Plan candidate = plan(m, c,
                                    {dp, tp, pp, zero, o.micro_batch_size, M, r, o.convention, o.efficiency, 1, 1,
                                     CpAlgo::ring, o.practice});
              candidate.memory.fits())
            fitting.push_back(std::move(candidate));
      if (fitting.size() == fitted_before) ++rejected.memory;
    }
  }
  if (why) *why = rejected;
  std::stable_sort(fitting.begin(), fitting.end(), [](const Plan& a, const Plan& b) {
    if (a.tokens_per_s != b.tokens_per_s) return a.tokens_per_s > b.tokens_per_s;
    return a.memory.total() < b.memory.total();
  });
  // A ZeRO stage that only costs memory (ZeRO-0 beside ZeRO-1: an all-reduce's bytes and time
  // are a reduce-scatter's plus an all-gather's) is the same configuration for speed: keep the
  // one with less memory (the times are summed in another order: equal to rounding).
  std::vector<Plan> distinct;
  for (auto& candidate : fitting) {
    const bool repeat = !distinct.empty() && [&](const Plan& above) {
      const auto &a = above.config, &b = candidate.config;
      return a.dp == b.dp && a.tp == b.tp && a.pp == b.pp && a.recompute == b.recompute &&
             std::abs(above.tokens_per_s - candidate.tokens_per_s) <= 1e-12 * above.tokens_per_s;
    }(distinct.back());
    if (!repeat) distinct.push_back(std::move(candidate));
    if (distinct.size() == o.keep) break;
  }
  fitting = std::move(distinct);
  std::vector<Ranked> ranked;
  for (std::size_t i = 0; i < fitting.size(); ++i)
    ranked.push_back({fitting[i], i == 0 ? std::string() : why_slower(fitting[i - 1], fitting[i])});
  return ranked;
}

}  // namespace dtl::theory
