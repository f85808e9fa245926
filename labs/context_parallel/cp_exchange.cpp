// Context-parallel attention (cp_exchange.h): the checks, the byte formulas, the dispatch,
// and ring attention. All-gather CP and Ulysses are in cp_collectives.cpp.
#include "labs/context_parallel/cp_exchange.h"

#include <string>
#include <utility>

#include "core/error.h"
#include "exercises/context_parallel.h"
#include "labs/context_parallel/cp_internal.h"

namespace dtl::cp {

void check_cp_layer(CpAlgo algo, const CpLayer& layer, int ranks) {
  const kernels::AttentionShape& a = layer.shape;
  if (a.batch < 1 || a.heads < 1 || a.head_dim < 1)
    throw UsageError("context-parallel attention needs at least 1 sequence, head and feature (got batch " +
                     std::to_string(a.batch) + ", heads " + std::to_string(a.heads) + ", head_dim " +
                     std::to_string(a.head_dim) + ")");
  check_cp_split(layer.split, a.seq, ranks);
  if (algo == CpAlgo::ulysses && a.heads % ranks != 0)
    throw UsageError("Ulysses gives each of the " + std::to_string(ranks) + " ranks whole heads, but " +
                     std::to_string(a.heads) + " heads do not divide by " + std::to_string(ranks) +
                     ": use a head count that is a multiple of the ranks, or ring / all-gather");
}

CpBytes cp_bytes_per_rank(CpAlgo algo, const CpLayer& layer, int ranks) {
  check_cp_layer(algo, layer, ranks);
  const std::uint64_t P = std::uint64_t(ranks), n = std::uint64_t(layer.shape.seq) / P;
  const std::uint64_t B = std::uint64_t(layer.shape.batch), w = std::uint64_t(layer.shape.heads * layer.shape.head_dim);
  const std::uint64_t chunk = n * B * 2 * w * sizeof(float);  // one rank's [K | V] rows
  switch (algo) {
    case CpAlgo::ring: return {(P - 1) * chunk, (P - 1) * chunk + (P > 1 ? P : 0) * chunk};
    case CpAlgo::all_gather: return {(P - 1) * chunk, (P - 1) * chunk};
    case CpAlgo::ulysses: {
      // each all-to-all's buffer is n·B rows of k·A·d floats in P blocks; P−1 blocks leave
      const std::uint64_t head_rows = n * B * (w / P) * sizeof(float);  // one block, one A/P-head row-width
      return {(P - 1) * head_rows * (3 + 1), (P - 1) * head_rows * (1 + 3)};
    }
  }
  return {};
}

CpSaved cp_attention_forward(Comm& cp, CpAlgo algo, const CpLayer& layer, const float* qkv) {
  check_cp_layer(algo, layer, cp.size());
  switch (algo) {
    case CpAlgo::ring: return ring_attention_forward(cp, layer, qkv);
    case CpAlgo::all_gather: return all_gather_attention_forward(cp, layer, qkv);
    case CpAlgo::ulysses: return ulysses_attention_forward(cp, layer, qkv);
  }
  throw Error("cp_attention_forward: unknown algorithm");
}

std::vector<float> cp_attention_backward(Comm& cp, CpAlgo algo, const CpLayer& layer, const float* qkv,
                                         const CpSaved& saved, const float* dout) {
  check_cp_layer(algo, layer, cp.size());
  switch (algo) {
    case CpAlgo::ring: return ring_attention_backward(cp, layer, qkv, saved, dout);
    case CpAlgo::all_gather: return all_gather_attention_backward(cp, layer, qkv, saved, dout);
    case CpAlgo::ulysses: return ulysses_attention_backward(cp, layer, qkv, saved, dout);
  }
  throw Error("cp_attention_backward: unknown algorithm");
}

// ---- ring attention ----
//
// At step t (0..P−1) rank r holds the K/V chunk that started on rank (r − t) mod P: it
// receives from r−1 and sends to r+1, so chunks move one rank up the ring per step.

namespace {

int ring_origin(const CpLocal& l, int t) { return ((l.rank - t) % l.P + l.P) % l.P; }

TransferInfo hop_info(const CpLocal& l, int t, const char* what) {
  const std::string whose = " of rank " + std::to_string(ring_origin(l, t + 1));
  return TransferInfo{.step = t, .what = std::string("for ") + what + whose + " at ring step " + std::to_string(t + 1)};
}

// Step t's block on the rank's timeline: the hop posted before it runs beside it.
ScopedSpan block_span(Comm& cp, Pass pass, int t) {
  const std::uint16_t label = cp.trace() ? cp.trace()->label("ring block", ring_block_role(pass)) : 0;
  return ScopedSpan(cp.trace(), cp.global_rank(), EventKind::compute, label, t);
}

}  // namespace

CpSaved ring_attention_forward(Comm& cp, const CpLayer& layer, const float* qkv) {
  check_cp_layer(CpAlgo::ring, layer, cp.size());
  const CpLocal l = cp_local(cp, layer);
  std::vector<float> kv = kv_chunk(qkv, l.rows, l.w), kv_next(kv.size());
  CpPartial acc = empty_partial(l.s, l.n);
  for (int t = 0; t < l.P; ++t) {
    const std::vector<int> kpos = cp_positions(layer.split, layer.shape.seq, l.P, ring_origin(l, t));
    // The learner's ring step (exercises.h): the next hop posted first, so it travels while
    // this block is computed; then both waited for and the chunks swapped.
    ex::ring_step(
        cp, kv, kv_next, kRingTagKv + t, hop_info(l, t, "the K/V chunk"), t + 1 == l.P, [&](const float* chunk) {
          const ScopedSpan span = block_span(cp, Pass::forward, t);
          const CpRows q = q_rows(qkv, l.w, l.pos.data(), l.n), k = k_rows(chunk, l.w, kpos.data(), l.n),
                       v = v_rows(chunk, l.w, kpos.data(), l.n);
          merge_partial(acc, block_forward(l.s, q, k, v), l.s);  // the online softmax: any order of chunks will do
        });
  }
  CpSaved saved;
  saved.out.resize(l.rows * std::size_t(l.w));
  saved.lse.resize(l.rows * std::size_t(l.s.heads));
  finalize_partial(acc, l.s, saved.out.data(), l.w, saved.lse.data());
  return saved;
}

// Backward: the same P steps. Each K/V chunk comes with its dK/dV accumulator; a rank adds
// its queries' share into it and passes both on. After the last step the accumulator a rank
// holds belongs to rank r+1, so one more hop brings every dK/dV home: P hops in all. The
// dK/dV hop waits for the block's compute (it carries its result); the K/V hop overlaps it.
std::vector<float> ring_attention_backward(Comm& cp, const CpLayer& layer, const float* qkv, const CpSaved& saved,
                                           const float* dout) {
  check_cp_layer(CpAlgo::ring, layer, cp.size());
  const CpLocal l = cp_local(cp, layer);
  const int next = (l.rank + 1) % l.P, prev = (l.rank - 1 + l.P) % l.P;
  std::vector<float> kv = kv_chunk(qkv, l.rows, l.w), kv_next(kv.size());
  std::vector<float> dkv(kv.size(), 0.0f), dkv_next(kv.size());
  std::vector<float> dqkv(l.rows * std::size_t(3 * l.w), 0.0f);
  const std::size_t bytes = kv.size() * sizeof(float);
  const std::vector<float> delta = softmax_delta(l.s, l.n, saved.out.data(), l.w, dout, l.w);
  const CpQueryGrad g{dout, l.w, saved.lse.data(), delta.data(), dqkv.data(), 3 * l.w};  // dQ: the Q part of dqkv
  for (int t = 0; t < l.P; ++t) {
    const std::vector<int> kpos = cp_positions(layer.split, layer.shape.seq, l.P, ring_origin(l, t));
    ex::ring_step(
        cp, kv, kv_next, kRingTagKvBack + t, hop_info(l, t, "the K/V chunk"), t + 1 == l.P, [&](const float* chunk) {
          {
            const ScopedSpan span = block_span(cp, Pass::backward, t);
            block_backward(l.s, q_rows(qkv, l.w, l.pos.data(), l.n), k_rows(chunk, l.w, kpos.data(), l.n),
                           v_rows(chunk, l.w, kpos.data(), l.n), g, CpKeyGrad{dkv.data(), dkv.data() + l.w, 2 * l.w});
          }
          if (l.P == 1) return;  // the accumulator follows its chunk (at t = P−1: home to its owner)
          const TransferInfo info = hop_info(l, t, "the dK/dV accumulator");
          Request d_send = cp.isend(dkv.data(), bytes, next, kRingTagDkv + t, info);
          Request d_recv = cp.irecv(dkv_next.data(), bytes, prev, kRingTagDkv + t, info);
          d_send.wait(), d_recv.wait();
          std::swap(dkv, dkv_next);
        });
  }
  put_kv_grad(dkv, dqkv, l.rows, l.w);
  return dqkv;
}

}  // namespace dtl::cp
