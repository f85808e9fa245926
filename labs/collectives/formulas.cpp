// The collectives lab's formulas (collectives_lab.h): what each algorithm costs, and where
// the figures come from in the curriculum's words.
#include "core/error.h"
#include "core/theory/collectives.h"
#include "exercises/collectives.h"
#include "labs/collectives/collectives_lab.h"

namespace dtl {

// N: the bytes per rank; P ranks; Q = 2^⌊log2 P⌋ (halving-doubling's core).
CollectiveFormulas collective_formulas(CollectiveKind c, AlgorithmKind a, int P, int channels) {
  // C channels (theory::channels_time): a rank's C connections overlap their α and share β.
  if (channels > 1 && a == AlgorithmKind::ring_sliced && c == CollectiveKind::all_reduce)
    return {"2(P-1)/P·N", "2(P-1)·S·C", "2(P-1)",
            "α-β, C channels: 2(P-1)·S·(α + C·b/β), b = N/(C·P·S): 2(P-1)·S·α + 2(P-1)/P·N/β"};
  if (channels > 1 && a == AlgorithmKind::double_tree && c == CollectiveKind::all_reduce)
    return {"per rank: N/2 × (parent + children) over both trees (≤ 2N)", "that × K × C", "4K",
            "α-β, C channels: m·(α + C·b/β) + 2F·(α + b/β), b = N/(2CK), m per channel, F the fill"};
  switch (c) {
    case CollectiveKind::reduce_scatter:
    case CollectiveKind::all_gather: return {"(P-1)/P·N", "P-1", "P-1", "α-β: (P-1)·(α+N/Pβ)"};
    case CollectiveKind::broadcast: return {"⌈log2 P⌉·N", "⌈log2 P⌉", "⌈log2 P⌉", "α-β: ⌈log2 P⌉·(α+N/β)"};
    default: break;
  }
  switch (a) {
    case AlgorithmKind::naive: return {"(P-1)·N (rank 0)", "P-1", "2(P-1)", "α-β: 2(P-1)·(α+N/β)"};
    case AlgorithmKind::ring: return {"2(P-1)/P·N", "2(P-1)", "2(P-1)", "α-β: 2(P-1)·(α+N/Pβ)"};
    case AlgorithmKind::double_tree:
      return {"per rank: N/2 × (parent + children) over both trees (≤ 2N)", "that × K", "4K",
              "α-β: busiest rank's m·α + B/β + 2F chunk hops (F: the children waited for up the deepest path)"};
    case AlgorithmKind::ring_sliced: return {"2(P-1)/P·N", "2(P-1)·S", "2(P-1)", "α-β: 2(P-1)·S·α + 2(P-1)/P·N/β"};
    case AlgorithmKind::hierarchical:  // G ranks per node, n nodes; _i within a node, _e between
      return {"2(G-1)/G·N + 2(n-1)/n·N/G", "2(G-1) + 2(n-1)", "2(G-1) + 2(n-1)",
              "α-β: 2(G-1)·(α_i+N/(G·β_i)) + 2(n-1)·(α_e+N/(G·n·β_e))"};
    case AlgorithmKind::tree: return {"⌈log2 P⌉·N", "⌈log2 P⌉", "2⌈log2 P⌉", "α-β: 2⌈log2 P⌉·(α+N/β)"};
    case AlgorithmKind::rhd:
      if (theory::floor_pow2(P) == P) return {"2(P-1)/P·N", "2·log2 P", "2·log2 P", "α-β: 2·log2 P·α + 2(P-1)/P·N/β"};
      return {"2(Q-1)/Q·N + N", "2·log2 Q + 1", "2·log2 Q + 2", "α-β: halving-doubling on Q + 2 folds"};
    case AlgorithmKind::none:
    case AlgorithmKind::library: break;  // no lab algorithm: no formula
  }
  return {};
}

theory::CommCost collective_cost(CollectiveKind c, AlgorithmKind a, int P, double N, theory::Link link) {
  switch (c) {
    case CollectiveKind::reduce_scatter: return theory::ring_reduce_scatter_cost(P, N, link);
    case CollectiveKind::all_gather: return theory::ring_all_gather_cost(P, N, link);
    case CollectiveKind::broadcast: return theory::tree_broadcast_cost(P, N, link);
    default: return theory::all_reduce_cost(a, P, N, link);
  }
}

// Slices and chunks are counted per channel: each channel's part is N/C bytes.
int lab_slices(const CollectivesSettings& s, double N, int P) {
  return s.slices > 0 ? s.slices : theory::ring_slices(N / s.channels / P);
}

bool has_channels(AlgorithmKind a) { return a == AlgorithmKind::ring_sliced || a == AlgorithmKind::double_tree; }

void require_slices_apply(const LabConfig& cfg, const CollectivesSettings& s) {
  const bool pipelined = s.collective == CollectiveKind::all_reduce && s.algo && has_channels(*s.algo);
  if (collectives_option_table().given(cfg.options, &CollectivesSettings::slices) && !pipelined)
    throw UsageError("--slices cuts the pipelined all-reduces (--algo ring_sliced or double_tree); this run has none");
  if (s.channels > 1 && !pipelined)
    throw UsageError("--channels " + std::to_string(s.channels) +
                     " splits the buffer over rings or tree pairs of NCCL's algorithms; this run has none: use "
                     "--algo ring_sliced or double_tree (--collective all_reduce), or drop --channels");
  if (s.algo == AlgorithmKind::double_tree && s.slices > ex::kTagStride / 2)  // a tag per chunk and tree
    throw UsageError("--slices " + std::to_string(s.slices) + ": the double tree takes at most " +
                     std::to_string(ex::kTagStride / 2) + " chunks per half; give fewer");
}

int lab_tree_chunks(const CollectivesSettings& s, double N) {
  return s.slices > 0 ? s.slices : theory::double_tree_chunks(N / s.channels);
}

theory::CommCost all_reduce_run_cost(const CollectivesSettings& s, AlgorithmKind a, int P, double N,
                                     theory::Link link) {
  const int C = s.channels;
  if (a == AlgorithmKind::ring_sliced) return theory::ring_sliced_all_reduce_cost(P, N, lab_slices(s, N, P), link, C);
  if (a == AlgorithmKind::double_tree) return theory::double_tree_all_reduce_cost(P, N, lab_tree_chunks(s, N), link, C);
  return collective_cost(CollectiveKind::all_reduce, a, P, N, link);
}

AllReduceFn all_reduce_fn(AlgorithmKind a, int S, int K) {
  // The textbook algorithms run on one communicator: the first (and only) channel.
  auto one = [](void (*fn)(Comm&, ex::BufferView, ReduceOp)) -> AllReduceFn {
    return [fn](std::span<Comm* const> ch, ex::BufferView b, ReduceOp o) { fn(*ch[0], b, o); };
  };
  switch (a) {
    case AlgorithmKind::naive: return one(ex::naive_all_reduce);
    case AlgorithmKind::ring: return one(ex::ring_all_reduce);
    case AlgorithmKind::tree: return one(ex::tree_all_reduce);
    case AlgorithmKind::rhd: return one(ex::rhd_all_reduce);
    case AlgorithmKind::ring_sliced:
      return [S](std::span<Comm* const> ch, ex::BufferView b, ReduceOp o) {
        ex::ring_sliced_all_reduce_channels(ch, b, o, S);
      };
    case AlgorithmKind::double_tree:
      return [K](std::span<Comm* const> ch, ex::BufferView b, ReduceOp o) {
        ex::double_tree_all_reduce_channels(ch, b, o, K);
      };
    case AlgorithmKind::hierarchical:  // needs the node and rail groups: hierarchical_case builds it
    case AlgorithmKind::none:
    case AlgorithmKind::library: break;  // not a lab algorithm (the option table offers none)
  }
  throw Error(std::string("all_reduce_fn: no lab all-reduce for algorithm '") + algorithm_kind_name(a) + "'");
}

// Bytes-per-rank tolerance (collectives_lab.h): chunks of uneven size shift a rank's share by up to a few elements.
double bytes_tolerance(int P, std::size_t count, DType t, int channels) {
  const std::size_t C = std::size_t(channels), part = count / C;
  const bool even = count % C == 0 && part % std::size_t(P) == 0 && part % std::size_t(theory::floor_pow2(P)) == 0;
  return even ? 0.0 : double(channels) * double(dtype_size(t)) * 2 * (theory::ceil_log2(P) + 1);
}

void ask_the_cost_calculator(int P, double bytes, std::size_t element_size, const LinkSpec& link, Report& rep) {
  ex::AllReduceQuestion q;
  q.parameters = bytes / double(element_size);  // one gradient element per parameter
  q.bytes_per_param = double(element_size);
  q.gpus = P;
  // Without an emulated link there is no bandwidth to ask about: only the bytes are compared.
  q.bandwidth_GBps = link.active() ? link.beta_Bps() * 1e-9 : 1.0;
  q.latency_us = link.active() ? link.alpha_s() * 1e6 : 0.0;
  const ex::AllReduceAnswer answer = ex::all_reduce_cost(q);
  const theory::CommCost ring =
      theory::all_reduce_cost(AlgorithmKind::ring, P, bytes, {link.alpha_s(), link.active() ? link.beta_Bps() : 0.0});
  rep.check("calculator.bytes_sent_per_gpu", "your all_reduce_cost: bytes per GPU (ring)", answer.bytes_sent_per_gpu,
            ring.bytes_per_rank, "B", 1e-9 * ring.bytes_per_rank)
      .from("2(P-1)/P·N, exercise all_reduce_cost");
  if (link.active())
    rep.check("calculator.time", "your all_reduce_cost: time (ring, α-β)", answer.time_s, ring.time_s, "s",
              1e-9 * ring.time_s)
        .from("2(P-1)·α + 2(P-1)/P·N/β, exercise all_reduce_cost");
}

}  // namespace dtl
