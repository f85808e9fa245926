// All-gather CP (Llama 3) and Ulysses (DeepSpeed-Ulysses): context-parallel attention with
// the library's collectives (cp_exchange.h has the algorithms, the layout and the bytes).
#include <string>

#include "core/comm/dtype.h"
#include "core/error.h"
#include "core/trace/vocab.h"
#include "labs/context_parallel/cp_exchange.h"
#include "labs/context_parallel/cp_internal.h"

namespace dtl::cp {

namespace {

// The trace says which pass a collective belongs to.
Role pass_role(Pass p) { return Role{.pass = p}; }

}  // namespace

// ---- all-gather CP ----

CpSaved all_gather_attention_forward(Comm& cp, const CpLayer& layer, const float* qkv) {
  check_cp_layer(CpAlgo::all_gather, layer, cp.size());
  const CpLocal l = cp_local(cp, layer);
  const std::vector<float> kv = kv_chunk(qkv, l.rows, l.w);
  CpSaved saved;
  saved.kv_all.resize(kv.size() * std::size_t(l.P));  // block q: rank q's [K | V] rows
  {
    const ScopedCollectiveRole role(pass_role(Pass::forward));
    cp.all_gather(kv.data(), saved.kv_all.data(), kv.size(), DType::f32);
  }
  const std::vector<int> all = all_positions(layer, l.P);  // S of them, in the buffer's order
  const float* kv_all = saved.kv_all.data();
  const int S = layer.shape.seq;
  saved.out.resize(l.rows * std::size_t(l.w));
  saved.lse.resize(l.rows * std::size_t(l.s.heads));
  const ScopedSpan span = attention_span(cp, CollectiveKind::all_gather, Pass::forward);
  const CpPartial p = block_forward(l.s, q_rows(qkv, l.w, l.pos.data(), l.n), k_rows(kv_all, l.w, all.data(), S),
                                    v_rows(kv_all, l.w, all.data(), S));
  finalize_partial(p, l.s, saved.out.data(), l.w, saved.lse.data());
  return saved;
}

// Every rank's queries add to every rank's dK/dV: summed and handed out by one reduce-scatter
// (rank q keeps block q, its own positions' rows).
std::vector<float> all_gather_attention_backward(Comm& cp, const CpLayer& layer, const float* qkv, const CpSaved& saved,
                                                 const float* dout) {
  check_cp_layer(CpAlgo::all_gather, layer, cp.size());
  const CpLocal l = cp_local(cp, layer);
  const std::vector<int> all = all_positions(layer, l.P);
  std::vector<float> dqkv(l.rows * std::size_t(3 * l.w), 0.0f), dkv_all(saved.kv_all.size(), 0.0f);
  const std::vector<float> delta = softmax_delta(l.s, l.n, saved.out.data(), l.w, dout, l.w);
  const CpQueryGrad g{dout, l.w, saved.lse.data(), delta.data(), dqkv.data(), 3 * l.w};
  const float* kv_all = saved.kv_all.data();
  const int S = layer.shape.seq;
  {
    const ScopedSpan span = attention_span(cp, CollectiveKind::all_gather, Pass::backward);
    block_backward(l.s, q_rows(qkv, l.w, l.pos.data(), l.n), k_rows(kv_all, l.w, all.data(), S),
                   v_rows(kv_all, l.w, all.data(), S), g, CpKeyGrad{dkv_all.data(), dkv_all.data() + l.w, 2 * l.w});
  }
  std::vector<float> dkv(l.rows * std::size_t(2 * l.w));
  {
    const ScopedCollectiveRole role(pass_role(Pass::backward));
    cp.reduce_scatter(dkv_all.data(), dkv.data(), dkv.size(), DType::f32, ReduceOp::sum);
  }
  put_kv_grad(dkv, dqkv, l.rows, l.w);
  return dqkv;
}

// ---- Ulysses ----
//
// A row of `parts` parts (qkv: Q, K, V; out: 1) of A·d floats each is cut by head groups:
// group j is heads [j·A/P, (j+1)·A/P), hw = (A/P)·d floats of every part. Sequence-sharded
// rows [rows × parts·A·d] ↔ an all-to-all buffer of P blocks [rows × parts·hw], block j the
// part rank j computes. After the all-to-all, block q holds rank q's positions of my heads:
// the whole sequence in rank order (all_positions), my heads only.

namespace {

// Where (row r, part, head group j) sits in sequence-sharded rows [rows × parts·P·hw] and in
// the all-to-all buffer of P blocks [rows × parts·hw] (block j for head group j).
std::size_t in_rows(std::size_t r, int part, int j, int P, int hw, int parts) {
  return (r * std::size_t(parts) + std::size_t(part)) * std::size_t(P * hw) + std::size_t(j * hw);
}
std::size_t in_blocks(std::size_t r, int part, int j, std::size_t rows, int hw, int parts) {
  return (std::size_t(j) * rows + r) * std::size_t(parts * hw) + std::size_t(part * hw);
}

// Sequence-sharded rows → P blocks, block j = head group j (parts kept in order in a row).
std::vector<float> split_heads(const float* src, std::size_t rows, int P, int hw, int parts) {
  std::vector<float> out(rows * std::size_t(parts * P * hw));
  for (int j = 0; j < P; ++j)
    for (std::size_t r = 0; r < rows; ++r)
      for (int part = 0; part < parts; ++part)
        std::copy_n(src + in_rows(r, part, j, P, hw, parts), hw, out.data() + in_blocks(r, part, j, rows, hw, parts));
  return out;
}

// The reverse: P blocks (block j = head group j of my rows) → rows [rows × parts·A·d].
std::vector<float> join_heads(const std::vector<float>& blocks, std::size_t rows, int P, int hw, int parts) {
  std::vector<float> out(blocks.size());
  for (int j = 0; j < P; ++j)
    for (std::size_t r = 0; r < rows; ++r)
      for (int part = 0; part < parts; ++part)
        std::copy_n(blocks.data() + in_blocks(r, part, j, rows, hw, parts), hw,
                    out.data() + in_rows(r, part, j, P, hw, parts));
  return out;
}

// One all-to-all of P equal blocks (send: block j for rank j), its pass on the trace.
std::vector<float> exchange(Comm& cp, const std::vector<float>& send, Pass pass) {
  std::vector<float> recv(send.size());
  const ScopedCollectiveRole role(pass_role(pass));
  cp.all_to_all(send.data(), recv.data(), send.size() / std::size_t(cp.size()), DType::f32);
  return recv;
}

}  // namespace

CpSaved ulysses_attention_forward(Comm& cp, const CpLayer& layer, const float* qkv) {
  check_cp_layer(CpAlgo::ulysses, layer, cp.size());
  const CpLocal l = cp_local(cp, layer);
  const int S = layer.shape.seq, hw = l.w / l.P;
  const CpShape mine{l.s.batch, l.s.heads / l.P, l.s.head_dim};  // my A/P heads
  CpSaved saved;
  saved.head_qkv = exchange(cp, split_heads(qkv, l.rows, l.P, hw, 3), Pass::forward);  // all-to-all 1
  const std::vector<int> all = all_positions(layer, l.P);
  const float* h = saved.head_qkv.data();  // rows [Q | K | V] of my heads, stride 3·hw
  saved.head_out.resize(std::size_t(S) * std::size_t(l.s.batch) * std::size_t(hw));
  saved.lse.resize(std::size_t(S) * std::size_t(l.s.batch) * std::size_t(mine.heads));
  {
    const ScopedSpan span = attention_span(cp, CollectiveKind::all_to_all, Pass::forward);
    const CpPartial p = block_forward(mine, {h, 3 * hw, all.data(), S}, {h + hw, 3 * hw, all.data(), S},
                                      {h + 2 * hw, 3 * hw, all.data(), S});
    finalize_partial(p, mine, saved.head_out.data(), hw, saved.lse.data());
  }
  // head_out is already P blocks, block q = rank q's positions: send each home
  saved.out = join_heads(exchange(cp, saved.head_out, Pass::forward), l.rows, l.P, hw, 1);  // all-to-all 2
  return saved;
}

std::vector<float> ulysses_attention_backward(Comm& cp, const CpLayer& layer, const float* qkv, const CpSaved& saved,
                                              const float* dout) {
  (void)qkv;  // forward kept its heads' qkv (saved.head_qkv)
  check_cp_layer(CpAlgo::ulysses, layer, cp.size());
  const CpLocal l = cp_local(cp, layer);
  const int S = layer.shape.seq, hw = l.w / l.P;
  const CpShape mine{l.s.batch, l.s.heads / l.P, l.s.head_dim};
  const std::vector<float> head_dout = exchange(cp, split_heads(dout, l.rows, l.P, hw, 1), Pass::backward);  // 3
  const std::vector<int> all = all_positions(layer, l.P);
  const std::vector<float> delta = softmax_delta(mine, S, saved.head_out.data(), hw, head_dout.data(), hw);
  std::vector<float> head_dqkv(saved.head_qkv.size(), 0.0f);
  const float* h = saved.head_qkv.data();
  const CpQueryGrad g{head_dout.data(), hw, saved.lse.data(), delta.data(), head_dqkv.data(), 3 * hw};
  {
    const ScopedSpan span = attention_span(cp, CollectiveKind::all_to_all, Pass::backward);
    block_backward(mine, {h, 3 * hw, all.data(), S}, {h + hw, 3 * hw, all.data(), S},
                   {h + 2 * hw, 3 * hw, all.data(), S}, g,
                   CpKeyGrad{head_dqkv.data() + hw, head_dqkv.data() + 2 * hw, 3 * hw});
  }
  return join_heads(exchange(cp, head_dqkv, Pass::backward), l.rows, l.P, hw, 3);  // all-to-all 4
}

}  // namespace dtl::cp
