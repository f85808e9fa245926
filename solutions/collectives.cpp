// Reference solutions of the collectives exercises (exercises/collectives.h).
//
// Run one:   dtlab run collectives --algo ring --ranks 4 --bytes 1K --step
// Grade:     dtlab grade --exercise ring_all_reduce
#include "core/theory/collectives.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/memory/device_ops.h"
#include "exercises/collectives.h"

// A call between two of these functions puts the name in parentheses, `(f)(args)`: it then
// means this file's f only, never the learner's f of the same name that argument-dependent
// lookup would add (exercises/track/reference_copy.cmake compiles this file a second time as
// dtl::ref, beside the learner's dtl::ex, for the labs to run where a stub is not written).

namespace dtl::ex {

namespace {

// The whole buffer, in the lab's chunk grid of P chunks.
TransferInfo whole(int step, int P) { return {step, 0, P}; }

}  // namespace

// ---- naive: everything through rank 0 ----------------------------------------------

void naive_all_reduce(Comm& comm, BufferView buf, ReduceOp op) {
  const int P = comm.size(), r = comm.rank();
  if (P == 1) return;
  if (r == 0) {
    for (int q = 1; q < P; ++q)  // rank 0's link carries all P-1 buffers, one after another
      comm.recv_reduce(buf.data, buf.count, buf.dtype, op, q, kTagNaive + q - 1, whole(q - 1, P));
    finish_average(buf.data, buf.count, buf.dtype, op, P);
    for (int q = 1; q < P; ++q)
      comm.send(buf.data, buf.bytes(), q, kTagNaiveBroadcast + q - 1, whole(P - 1 + q - 1, P));
  } else {
    comm.send(buf.data, buf.bytes(), 0, kTagNaive + r - 1, whole(r - 1, P));
    comm.recv(buf.data, buf.bytes(), 0, kTagNaiveBroadcast + r - 1, whole(P - 1 + r - 1, P));
  }
}

// ---- ring --------------------------------------------------------------------------

void ring_reduce_scatter(Comm& comm, BufferView buf, ReduceOp op) {
  const int P = comm.size(), r = comm.rank();
  const int right = mod(r + 1, P), left = mod(r - 1, P);
  for (int s = 0; s < P - 1; ++s) {
    const int send_chunk = mod(r - s - 1, P), recv_chunk = mod(r - s - 2, P);
    const ChunkRange out = chunk_range(buf.count, P, send_chunk), in = chunk_range(buf.count, P, recv_chunk);
    // Post the receive first so the neighbour's data can land the moment it is sent.
    Request rx = comm.irecv_reduce(buf.at(in.offset), in.count, buf.dtype, op, left, kTagRingReduceScatter + s,
                                   {s, recv_chunk, 1});
    Request tx = comm.isend(buf.at(out.offset), out.count * buf.element_size(), right, kTagRingReduceScatter + s,
                            {s, send_chunk, 1});
    rx.wait();
    tx.wait();
  }
}

void ring_all_gather(Comm& comm, BufferView buf) {
  const int P = comm.size(), r = comm.rank();
  const int right = mod(r + 1, P), left = mod(r - 1, P);
  for (int s = 0; s < P - 1; ++s) {
    const int send_chunk = mod(r - s, P), recv_chunk = mod(r - s - 1, P);
    const ChunkRange out = chunk_range(buf.count, P, send_chunk), in = chunk_range(buf.count, P, recv_chunk);
    Request rx = comm.irecv(buf.at(in.offset), in.count * buf.element_size(), left, kTagRingAllGather + s,
                            {P - 1 + s, recv_chunk, 1});
    Request tx = comm.isend(buf.at(out.offset), out.count * buf.element_size(), right, kTagRingAllGather + s,
                            {P - 1 + s, send_chunk, 1});
    rx.wait();
    tx.wait();
  }
}

void ring_all_reduce(Comm& comm, BufferView buf, ReduceOp op) {
  const int P = comm.size(), r = comm.rank();
  (ring_reduce_scatter)(comm, buf, op);
  // Rank r now owns the finished chunk r: average it once before it is copied around.
  const ChunkRange mine = chunk_range(buf.count, P, r);
  finish_average(buf.at(mine.offset), mine.count, buf.dtype, op, P);
  (ring_all_gather)(comm, buf);
}

// ---- hierarchical: rings inside the node, rails between nodes ------------------------

void hierarchical_all_reduce(Comm& node, Comm& rail, BufferView buf, ReduceOp op) {
  const int G = node.size(), nodes = rail.size();
  // Sum through both tiers; an average divides once, by every rank, at the end (finish_average).
  const ReduceOp partial = op == ReduceOp::avg ? ReduceOp::sum : op;
  (ring_reduce_scatter)(node, buf, partial);
  const ChunkRange mine = chunk_range(buf.count, G, node.rank());
  const BufferView chunk{buf.at(mine.offset), mine.count, buf.dtype};
  (ring_all_reduce)(rail, chunk, partial);  // only N/G crosses between nodes, on this rank's rail
  finish_average(chunk.data, chunk.count, chunk.dtype, op, G * nodes);
  (ring_all_gather)(node, buf);
}

// ---- the ring pipelined in slices (NCCL's chunk/slice structure) ------------------

namespace {

// Slice i of chunk c: the chunk cut into S pieces the way the buffer is cut into chunks.
ChunkRange slice_range(const BufferView& buf, int P, int c, int S, int i) {
  const ChunkRange chunk = chunk_range(buf.count, P, c), slice = chunk_range(chunk.count, S, i);
  return {chunk.offset + slice.offset, slice.count};
}

// Channel h's part of the buffer (chunk h of C): a ring, or a pair of trees, of its own.
BufferView channel_part(const BufferView& buf, int C, int h) {
  const ChunkRange p = chunk_range(buf.count, C, h);
  return {buf.at(p.offset), p.count, buf.dtype};
}

// Chunk k of tree t's half of channel h's part: the part cut in two halves, each into K chunks.
BufferView tree_piece(const BufferView& buf, int C, int h, int t, int K, int k) {
  const BufferView part = channel_part(buf, C, h);
  const ChunkRange half = chunk_range(part.count, 2, t), piece = chunk_range(half.count, K, k);
  return {part.at(half.offset + piece.offset), piece.count, buf.dtype};
}

// The channels must be one group's: same size, same rank in each.
void require_channels(std::span<Comm* const> channels, const char* who) {
  if (channels.empty()) throw Error(std::string(who) + ": give at least one channel");
  for (Comm* c : channels)
    if (c->size() != channels[0]->size() || c->rank() != channels[0]->rank())
      throw Error(std::string(who) + ": the channels must be splits of one group (Comm::split_channels)");
}

}  // namespace

void ring_sliced_all_reduce(Comm& comm, BufferView buf, ReduceOp op, int slices) {
  Comm* one[] = {&comm};
  (ring_sliced_all_reduce_channels)(one, buf, op, slices);
}

void ring_sliced_all_reduce_channels(std::span<Comm* const> channels, BufferView buf, ReduceOp op, int slices) {
  require_channels(channels, "ring_sliced_all_reduce_channels");
  const int C = int(channels.size()), P = channels[0]->size(), r = channels[0]->rank(), S = std::max(1, slices);
  if (P == 1) return;
  const int right = mod(r + 1, P), left = mod(r - 1, P), steps = 2 * (P - 1);
  // Steps 0..P-2 reduce-scatter, P-1..2P-3 all-gather; both send chunk r-s-1 and receive r-s-2.
  auto tag = [P](int s) { return s < P - 1 ? kTagRingReduceScatter + s : kTagRingAllGather + s - (P - 1); };
  std::vector<Request> sends;  // waited for at the end: a receiver may still be reading them
  auto send_slice = [&](int h, int s, int i) {
    const BufferView part = channel_part(buf, C, h);
    const int c = mod(r - s - 1, P);
    const ChunkRange out = slice_range(part, P, c, S, i);
    sends.push_back(
        channels[std::size_t(h)]->isend(part.at(out.offset), out.count * buf.element_size(), right, tag(s), {s, c, 1}));
  };
  for (int i = 0; i < S; ++i)  // step 0's slices are ready at once, on every channel
    for (int h = 0; h < C; ++h) send_slice(h, 0, i);
  for (int s = 0; s < steps; ++s) {
    const int c = mod(r - s - 2, P);
    auto slice_in = [&](int h, int i) {  // slice i of chunk c of channel h's part
      const BufferView part = channel_part(buf, C, h);
      const ChunkRange in = slice_range(part, P, c, S, i);
      return BufferView{part.at(in.offset), in.count, buf.dtype};
    };
    for (int i = 0; i < S; ++i) {
      // The channels' slice i travel at once, each on its own ring: post every receive first.
      std::vector<Request> in_flight;
      for (int h = 0; h < C; ++h) {
        const BufferView in = slice_in(h, i);
        Comm& ring = *channels[std::size_t(h)];
        in_flight.push_back(s < P - 1 ? ring.irecv_reduce(in.data, in.count, in.dtype, op, left, tag(s), {s, c, 1})
                                      : ring.irecv(in.data, in.bytes(), left, tag(s), {s, c, 1}));
      }
      for (int h = 0; h < C; ++h) {
        in_flight[std::size_t(h)].wait();
        const BufferView in = slice_in(h, i);
        // The last reduce-scatter step finishes chunk r (c == r): average it once, slice by slice.
        if (s == P - 2) finish_average(in.data, in.count, in.dtype, op, P);
        // The slice just received is what the next step sends: pass it on now, not after the chunk.
        if (s + 1 < steps) send_slice(h, s + 1, i);
      }
    }
  }
  for (Request& q : sends) q.wait();
}

// ---- NCCL's double binary tree ----------------------------------------------------

// The construction lives in core/theory (the double tree's cost counts its links too).
theory::TreeLinks double_binary_tree(int P, int rank, int tree) { return theory::double_tree_links(P, rank, tree); }

void double_tree_all_reduce(Comm& comm, BufferView buf, ReduceOp op, int chunks) {
  Comm* one[] = {&comm};
  (double_tree_all_reduce_channels)(one, buf, op, chunks);
}

void double_tree_all_reduce_channels(std::span<Comm* const> channels, BufferView buf, ReduceOp op, int chunks) {
  require_channels(channels, "double_tree_all_reduce_channels");
  const int C = int(channels.size()), P = channels[0]->size(), r = channels[0]->rank();
  const int K = std::clamp(chunks, 1, kTagStride / 2);
  if (P == 1) return;
  // ex:: on purpose: the learner's trees (exercise 8) even where this all-reduce is the reference.
  const theory::TreeLinks tree[2] = {ex::double_binary_tree(P, r, 0), ex::double_binary_tree(P, r, 1)};
  auto up = [](int t, int k) { return kTagTreeReduce + 2 * k + t; };  // per tree: a pair may be in both
  auto down = [](int t, int k) { return kTagTreeBroadcast + 2 * k + t; };
  std::vector<Request> sends, from_parent(std::size_t(2 * K * C));  // from_parent[(t·K + k)·C + h]
  auto slot = [&](int t, int k, int h) { return std::size_t((t * K + k) * C + h); };
  auto piece = [&](int h, int t, int k) { return tree_piece(buf, C, h, t, K, k); };
  auto send_all = [&](int t, int k, int peer, int tag, TransferInfo info) {  // every channel's chunk k
    for (int h = 0; h < C; ++h)
      sends.push_back(channels[std::size_t(h)]->isend(piece(h, t, k).data, piece(h, t, k).bytes(), peer, tag, info));
  };
  // NCCL runs its two trees on channels of their own, so neither waits for the other: a leaf has
  // nothing to wait for and sends every chunk up at once; inner nodes go chunk by chunk, each
  // child's chunk k reduced in (one child at a time: both reduce into one piece), then sent up.
  for (int t = 0; t < 2; ++t)
    for (int k = 0; k < K && tree[t].child_count() == 0; ++k) send_all(t, k, tree[t].parent, up(t, k), {k, 0, P});
  for (int k = 0; k < K; ++k)
    for (int t = 0; t < 2; ++t) {
      if (tree[t].child_count() == 0) continue;
      for (const int child : tree[t].children) {
        if (child < 0) continue;
        std::vector<Request> in;
        for (int h = 0; h < C; ++h)
          in.push_back(channels[std::size_t(h)]->irecv_reduce(piece(h, t, k).data, piece(h, t, k).count, buf.dtype, op,
                                                              child, up(t, k), {k, 0, P}));
        for (Request& q : in) q.wait();
      }
      if (tree[t].parent >= 0) send_all(t, k, tree[t].parent, up(t, k), {k, 0, P});
      for (int h = 0; h < C && tree[t].parent < 0; ++h)  // the root holds chunk k's total
        finish_average(piece(h, t, k).data, piece(h, t, k).count, buf.dtype, op, P);
    }
  // Broadcast down, every receive from the parent posted at once (it sends k after reducing ours).
  for (int t = 0; t < 2; ++t)
    for (int k = 0; k < K && tree[t].parent >= 0; ++k)
      for (int h = 0; h < C; ++h)
        from_parent[slot(t, k, h)] = channels[std::size_t(h)]->irecv(piece(h, t, k).data, piece(h, t, k).bytes(),
                                                                     tree[t].parent, down(t, k), {K + k, 0, P});
  for (int k = 0; k < K; ++k)  // inner nodes pass each chunk on; a leaf's receives are waited for last
    for (int t = 0; t < 2; ++t) {
      for (int h = 0; h < C && tree[t].parent >= 0 && tree[t].child_count() > 0; ++h) from_parent[slot(t, k, h)].wait();
      for (const int child : tree[t].children)
        if (child >= 0) send_all(t, k, child, down(t, k), {K + k, 0, P});
    }
  for (int t = 0; t < 2; ++t)
    for (std::size_t i = slot(t, 0, 0); i < slot(t + 1, 0, 0) && tree[t].child_count() == 0; ++i) from_parent[i].wait();
  for (Request& q : sends) q.wait();
}

// ---- library reduce_scatter ∘ all_gather -------------------------------------------

void all_reduce_by_reduce_scatter_all_gather(Comm& comm, BufferView buf, ReduceOp op) {
  const std::size_t P = std::size_t(comm.size()), es = buf.element_size();
  const std::size_t block = (buf.count + P - 1) / P;  // pad to P equal blocks (NCCL's convention)
  // Staging in the buffer's own memory (host, or its GPU): copy_bytes works on either.
  ScratchBuffer padded(block * P * es, buf.data), mine(block * es, buf.data);
  copy_bytes(padded.data(), buf.data, buf.bytes());
  comm.reduce_scatter(padded.data(), mine.data(), block, buf.dtype, op);
  comm.all_gather(mine.data(), padded.data(), block, buf.dtype);
  copy_bytes(buf.data, padded.data(), buf.bytes());  // drop the padding
}

// ---- binomial trees ----------------------------------------------------------------

void tree_reduce(Comm& comm, BufferView buf, ReduceOp op, int root) {
  const int P = comm.size(), vr = mod(comm.rank() - root, P);  // rank relative to the root
  for (int mask = 1, k = 0; mask < P; mask <<= 1, ++k) {
    if (vr & mask) {  // my subtree is complete: hand it to my parent and stop
      comm.send(buf.data, buf.bytes(), mod(vr - mask + root, P), kTagTreeReduce + k, whole(k, P));
      return;
    }
    if (vr + mask < P)
      comm.recv_reduce(buf.data, buf.count, buf.dtype, op, mod(vr + mask + root, P), kTagTreeReduce + k, whole(k, P));
  }
}

void tree_broadcast(Comm& comm, BufferView buf, int root) {
  const int P = comm.size(), vr = mod(comm.rank() - root, P);
  const int levels = theory::ceil_log2(P);
  int mask = 1, k = 0;
  for (; mask < P; mask <<= 1, ++k) {  // find my parent: the lowest set bit of vr
    if (vr & mask) {
      comm.recv(buf.data, buf.bytes(), mod(vr - mask + root, P), kTagTreeBroadcast + k, whole(levels + k, P));
      break;
    }
  }
  for (mask >>= 1, --k; mask > 0; mask >>= 1, --k)  // then feed my children, largest subtree first
    if (vr + mask < P)
      comm.send(buf.data, buf.bytes(), mod(vr + mask + root, P), kTagTreeBroadcast + k, whole(levels + k, P));
}

void tree_all_reduce(Comm& comm, BufferView buf, ReduceOp op) {
  (tree_reduce)(comm, buf, op, 0);
  if (comm.rank() == 0) finish_average(buf.data, buf.count, buf.dtype, op, comm.size());
  (tree_broadcast)(comm, buf, 0);
}

// ---- recursive halving-doubling (Rabenseifner) -------------------------------------

namespace {

// The core's grid: `core` segments of the buffer; [lo, hi) is a run of segments.
struct RhdGrid {
  const BufferView& buf;
  int core, extra;
  ChunkRange elems(int lo, int hi) const {
    const ChunkRange a = chunk_range(buf.count, core, lo);
    const std::size_t end = hi == core ? buf.count : chunk_range(buf.count, core, hi).offset;
    return ChunkRange{a.offset, end - a.offset};
  }
  int real_rank(int v) const { return v < extra ? 2 * v + 1 : v + extra; }  // virtual rank → rank
};

// Reduce-scatter by recursive halving: keep half of my range, send the other half. Returns
// my segments [lo, hi), fully reduced.
std::pair<int, int> rhd_halving(Comm& comm, const RhdGrid& g, int vr, ReduceOp op, int& step) {
  const BufferView& buf = g.buf;
  int lo = 0, hi = g.core;
  for (int mask = g.core / 2; mask >= 1; mask /= 2, ++step) {
    const int partner = g.real_rank(vr ^ mask), mid = (lo + hi) / 2;
    const bool upper = vr & mask;
    const int keep_lo = upper ? mid : lo, keep_hi = upper ? hi : mid;
    const int give_lo = upper ? lo : mid, give_hi = upper ? mid : hi;
    const ChunkRange keep = g.elems(keep_lo, keep_hi), give = g.elems(give_lo, give_hi);
    Request rx = comm.irecv_reduce(buf.at(keep.offset), keep.count, buf.dtype, op, partner, kTagRhd + step,
                                   {step, keep_lo, keep_hi - keep_lo});
    Request tx = comm.isend(buf.at(give.offset), give.count * buf.element_size(), partner, kTagRhd + step,
                            {step, give_lo, give_hi - give_lo});
    rx.wait();
    tx.wait();
    lo = keep_lo;
    hi = keep_hi;
  }
  return {lo, hi};
}

// All-gather by recursive doubling: swap my range for my partner's, then both are mine.
void rhd_doubling(Comm& comm, const RhdGrid& g, int vr, int lo, int hi, int& step) {
  const BufferView& buf = g.buf;
  const std::size_t es = buf.element_size();
  for (int mask = 1; mask < g.core; mask *= 2, ++step) {
    const int partner = g.real_rank(vr ^ mask), width = hi - lo;
    const int other_lo = (vr & mask) ? lo - width : hi;
    const ChunkRange have = g.elems(lo, hi), want = g.elems(other_lo, other_lo + width);
    Request rx = comm.irecv(buf.at(want.offset), want.count * es, partner, kTagRhd + step, {step, other_lo, width});
    Request tx = comm.isend(buf.at(have.offset), have.count * es, partner, kTagRhd + step, {step, lo, width});
    rx.wait();
    tx.wait();
    lo = std::min(lo, other_lo);
    hi = lo + 2 * width;
  }
}

}  // namespace

void rhd_all_reduce(Comm& comm, BufferView buf, ReduceOp op) {
  const int P = comm.size(), r = comm.rank();
  if (P == 1) return;
  const RhdGrid g{buf, theory::floor_pow2(P), P - theory::floor_pow2(P)};
  const int core = g.core, extra = g.extra;
  int step = 0;
  // Pre-step: the first 2·extra ranks pair up; even ones hand their data to the odd one.
  const int vr = r < 2 * extra ? (r % 2 ? r / 2 : -1) : r - extra;
  if (extra > 0) {
    if (r < 2 * extra && r % 2 == 0)
      comm.send(buf.data, buf.bytes(), r + 1, kTagRhd + step, {step, 0, core});
    else if (r < 2 * extra)
      comm.recv_reduce(buf.data, buf.count, buf.dtype, op, r - 1, kTagRhd + step, {step, 0, core});
    ++step;
  }
  if (vr >= 0) {
    const auto [lo, hi] = rhd_halving(comm, g, vr, op, step);
    const ChunkRange mine = g.elems(lo, hi);  // segment vr, fully reduced
    finish_average(buf.at(mine.offset), mine.count, buf.dtype, op, P);
    rhd_doubling(comm, g, vr, lo, hi, step);
  } else {
    step += 2 * theory::ceil_log2(core);
  }
  // Post-step: odd ranks of the pairs return the result to their even partner.
  if (extra > 0 && r < 2 * extra) {
    if (r % 2)
      comm.send(buf.data, buf.bytes(), r - 1, kTagRhd + step, {step, 0, core});
    else
      comm.recv(buf.data, buf.bytes(), r + 1, kTagRhd + step, {step, 0, core});
  }
}

// ---- cost calculator ---------------------------------------------------------------

AllReduceAnswer all_reduce_cost(const AllReduceQuestion& q) {
  const int P = q.gpus;
  const double grad_bytes = q.parameters * q.bytes_per_param;
  AllReduceAnswer a;
  a.bytes_sent_per_gpu = P > 1 ? 2.0 * (P - 1) / P * grad_bytes : 0.0;
  a.time_s = P > 1 ? 2.0 * (P - 1) * q.latency_us * 1e-6 + a.bytes_sent_per_gpu / (q.bandwidth_GBps * 1e9) : 0.0;
  a.efficiency = q.compute_s / (q.compute_s + a.time_s);
  return a;
}

}  // namespace dtl::ex
