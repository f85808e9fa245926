// The collectives lab's cases: each algorithm of each collective as the lab runs it, with its
// input, its exact expected result and its formulas (collectives_cases.h).
#include "labs/collectives/collectives_cases.h"

#include <cstring>
#include <limits>
#include <memory>

#include "core/error.h"
#include "labs/collectives/crafted.h"

namespace dtl {

namespace {

constexpr double kUnchecked = std::numeric_limits<double>::quiet_NaN();

// The emulated links as the formulas take them: within a node (or the one link), between nodes.
theory::Link intra_link(const LabConfig& cfg) {
  return {cfg.link.alpha_s(), cfg.link.active() ? cfg.link.beta_Bps() : 0.0};
}
theory::Link inter_link(const LabConfig& cfg) {
  const LinkSpec& l = cfg.nodes.inter;
  return {l.alpha_s(), l.active() ? l.beta_Bps() : 0.0};
}

// A lock-step algorithm on two tiers runs at its slowest link; only the rings have every step
// cross between nodes, so only theirs is predicted there.
bool time_predicted_on(const LabConfig& cfg, AlgorithmKind a) {
  return !cfg.nodes.two_tier() || a == AlgorithmKind::ring || a == AlgorithmKind::ring_sliced ||
         a == AlgorithmKind::hierarchical;
}

// --algo hierarchical: this node's ranks and this rank's rail, split once for every run.
Case hierarchical_case(Comm& comm, const LabConfig& cfg, const CollectivesSettings& s, double N) {
  const NodeLayout& nodes = cfg.nodes;
  if (!nodes.two_tier())
    throw UsageError(
        "--algo hierarchical needs nodes: add --topology nodes=N,gpus=G (and intra=..,inter=.. to "
        "emulate the two links)");
  const int G = nodes.gpus_per_node, r = comm.rank();
  std::shared_ptr<Comm> node = comm.split(r / G, r), rail = comm.split(r % G, r);
  const DType t = cfg.dtype;
  const ReduceOp op = s.op;
  const int P = comm.size();
  return {"hierarchical all_reduce",
          "hierarchical",
          theory::hierarchical_all_reduce_cost(nodes.nodes, G, N, intra_link(cfg), inter_link(cfg)),
          collective_formulas(CollectiveKind::all_reduce, AlgorithmKind::hierarchical, P),
          CollectiveKind::all_reduce,
          AlgorithmKind::hierarchical,
          [node, rail, op](Comm&, ex::BufferView b) { ex::hierarchical_all_reduce(*node, *rail, b, op); },
          [t, r](ex::BufferView b) { fill_crafted(b.data, b.count, t, r); },
          [P, op, t](std::size_t i) { return crafted_expected(i, P, op, t); }};
}

// The all-reduce algorithms --algo names (all: the course's four side by side; NCCL's
// ring_sliced, double_tree and hierarchical run by name).
std::vector<Case> all_reduce_cases(Comm& comm, const LabConfig& cfg, const CollectivesSettings& s, double N,
                                   const theory::Link& link) {
  const int P = comm.size(), r = comm.rank();
  const DType t = cfg.dtype;
  const ReduceOp op = s.op;
  if (s.algo == AlgorithmKind::hierarchical) return {hierarchical_case(comm, cfg, s, N)};
  const std::vector<AlgorithmKind> algos = s.algo
                                               ? std::vector<AlgorithmKind>{*s.algo}
                                               : std::vector<AlgorithmKind>{AlgorithmKind::naive, AlgorithmKind::ring,
                                                                            AlgorithmKind::tree, AlgorithmKind::rhd};
  // --channels C: C communicators over the same ranks, split once for every run (NCCL's
  // channels: each its own connections on the emulated link).
  const int C = s.channels;
  auto channels = std::make_shared<std::vector<std::unique_ptr<Comm>>>();
  if (C > 1) *channels = comm.split_channels(C);
  std::vector<Case> cases;
  for (const AlgorithmKind a : algos) {
    const AllReduceFn fn = all_reduce_fn(a, lab_slices(s, N, P), lab_tree_chunks(s, N));
    const std::string algo_id(algorithm_kind_name(a));
    cases.push_back({algo_id + " all_reduce", algo_id, all_reduce_run_cost(s, a, P, N, link),
                     collective_formulas(CollectiveKind::all_reduce, a, P, C), CollectiveKind::all_reduce, a,
                     [fn, op, channels](Comm& c, ex::BufferView b) {
                       std::vector<Comm*> on{&c};
                       if (!channels->empty()) {
                         on.clear();
                         for (const auto& ch : *channels) on.push_back(ch.get());
                       }
                       fn(on, b, op);
                     },
                     [t, r](ex::BufferView b) { fill_crafted(b.data, b.count, t, r); },
                     [P, op, t](std::size_t i) { return crafted_expected(i, P, op, t); }, time_predicted_on(cfg, a),
                     C});
  }
  return cases;
}

}  // namespace

std::vector<Case> make_cases(Comm& comm, const LabConfig& cfg, const CollectivesSettings& s, std::size_t count) {
  const int P = comm.size(), r = comm.rank();
  const DType t = cfg.dtype;
  const ReduceOp op = s.op;
  const double N = double(count * dtype_size(t));
  const CollectiveKind collective = s.collective;
  // α-β times when emulated; on two tiers the flat algorithms' steps wait for the link between nodes
  const theory::Link link = cfg.nodes.two_tier() ? inter_link(cfg) : intra_link(cfg);
  if (collective == CollectiveKind::all_reduce) return all_reduce_cases(comm, cfg, s, N, link);
  auto crafted = [t, r](ex::BufferView b) { fill_crafted(b.data, b.count, t, r); };
  auto reduced = [P, op, t](std::size_t i) { return crafted_expected(i, P, op, t); };

  std::vector<Case> cases;
  if (collective == CollectiveKind::reduce_scatter || collective == CollectiveKind::all_gather) {
    if (s.algo != AlgorithmKind::ring)
      throw UsageError(std::string("--collective ") + collective_kind_name(collective) +
                       " is built as a ring here; use --algo ring");
    const ChunkRange mine = chunk_range(count, P, r);
    if (collective == CollectiveKind::reduce_scatter) {
      cases.push_back({"ring reduce_scatter", "ring",
                       collective_cost(CollectiveKind::reduce_scatter, AlgorithmKind::ring, P, N, link),
                       collective_formulas(CollectiveKind::reduce_scatter, AlgorithmKind::ring, P),
                       CollectiveKind::reduce_scatter, AlgorithmKind::ring,
                       [op](Comm& c, ex::BufferView b) { ex::ring_reduce_scatter(c, b, op); }, crafted,
                       [=](std::size_t i) {  // only my own chunk is final; avg is divided by the caller
                         if (i < mine.offset || i >= mine.offset + mine.count) return kUnchecked;
                         return op == ReduceOp::avg ? crafted_expected(i, P, ReduceOp::sum, t) : reduced(i);
                       }});
    } else {
      cases.push_back(
          {"ring all_gather", "ring", collective_cost(CollectiveKind::all_gather, AlgorithmKind::ring, P, N, link),
           collective_formulas(CollectiveKind::all_gather, AlgorithmKind::ring, P), CollectiveKind::all_gather,
           AlgorithmKind::ring, [](Comm& c, ex::BufferView b) { ex::ring_all_gather(c, b); }, crafted,
           [P, count](std::size_t i) {  // chunk c comes from rank c
             for (int c = 0; c < P; ++c) {
               const ChunkRange cr = chunk_range(count, P, c);
               if (i >= cr.offset && i < cr.offset + cr.count) return crafted_value(c, i);
             }
             return kUnchecked;
           }});
    }
    return cases;
  }
  // broadcast from rank 0
  if (s.algo != AlgorithmKind::tree)
    throw UsageError("--collective broadcast is built as a binomial tree here; use --algo tree");
  cases.push_back({"tree broadcast", "tree",
                   collective_cost(CollectiveKind::broadcast, AlgorithmKind::tree, P, N, link),
                   collective_formulas(CollectiveKind::broadcast, AlgorithmKind::tree, P), CollectiveKind::broadcast,
                   AlgorithmKind::tree, [](Comm& c, ex::BufferView b) { ex::tree_broadcast(c, b, 0); },
                   [t, r](ex::BufferView b) {
                     if (r == 0)
                       fill_crafted(b.data, b.count, t, 0);
                     else
                       std::memset(b.data, 0, b.bytes());
                   },
                   [](std::size_t i) { return crafted_value(0, i); }, time_predicted_on(cfg, AlgorithmKind::tree)});
  return cases;
}

}  // namespace dtl
