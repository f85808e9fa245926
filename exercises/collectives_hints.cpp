// The collectives exercises' hints (exercises/collectives.h), three levels each: what
// `dtlab grade --hint N` prints under a failing exercise. Prose only: name functions, indices
// and formulas, never a line of the solution (tests/grade/hints_test.cpp checks).
#include <array>

#include "exercises/track/hints.h"

namespace dtl::ex {

namespace {

constexpr std::array<ExerciseHints, 10> kCollectivesHints = {
    {{"naive_all_reduce",
      {"Everything goes through one rank. Rank 0 collects every other rank's buffer, combines each into its own, "
       "then hands the finished buffer back to every rank. It works, but rank 0's link carries (P-1)·N bytes each "
       "way while the other links idle: the bottleneck the ring removes.",
       "Rank q (1 <= q < P) sends its whole buffer to rank 0 with tag kTagNaive + q - 1, then receives the result "
       "with tag kTagNaiveBroadcast + q - 1. Rank 0 combines with comm.recv_reduce (avg is combined as a sum) and "
       "divides once with finish_average before sending back. On one rank there is nothing to do.",
       "Outline: return at once when there is a single rank. On rank 0, go through the other ranks in order and "
       "receive-and-combine each one's buffer into yours, finish the average, then send the buffer to each other "
       "rank in turn. On every other rank, send your buffer to rank 0, then receive the result into the same "
       "buffer. Label each transfer with a TransferInfo (its step, first chunk 0, all P chunks)."}},
     {"ring_reduce_scatter",
      {"Cut the buffer into P chunks and put the ranks on a ring. In each step every rank passes one chunk to its "
       "right neighbour and adds the chunk arriving from its left neighbour into its own copy. After P-1 steps rank "
       "r's chunk r holds all P contributions. Each rank sends (P-1)/P·N bytes, and only to rank r+1.",
       "Rank r, steps s = 0 .. P-2: send chunk (r-s-1) mod P to rank (r+1) mod P, and receive chunk (r-s-2) mod P "
       "from rank (r-1) mod P, combining it into yours (comm.irecv_reduce). chunk_range(count, P, c) gives chunk "
       "c's offset and element count. Tag kTagRingReduceScatter + s. Use mod() from core/comm/chunking.h: the % "
       "of C++ is negative for a negative left side.",
       "Outline: name your left and right neighbours. For each of the P-1 steps, work out the chunk you send and "
       "the chunk you receive and their element ranges. Post the receive that combines into your buffer first, "
       "then the send, both non-blocking, each labelled with a TransferInfo of the step, the chunk and one chunk. "
       "Wait for both before the next step: the chunk that just arrived is the one you pass on next. Do not "
       "average here, the caller finishes it."}},
     {"ring_all_gather",
      {"The mirror of reduce-scatter. Before it, rank r owns the finished chunk r. Pass finished chunks around the "
       "ring, copying instead of adding: after P-1 steps every rank holds every chunk.",
       "Rank r, steps s = 0 .. P-2: send chunk (r-s) mod P to the right, receive chunk (r-s-1) mod P from the left "
       "with a plain comm.irecv (no reduction). Tag kTagRingAllGather + s. In the trace these steps follow the "
       "reduce-scatter's P-1 steps, so label them as step P-1+s.",
       "Outline: the shape of your reduce-scatter (neighbours, P-1 steps, ranges from chunk_range) with two "
       "changes. The chunk indices shift by one, so that your first send is the chunk you own. The receive "
       "overwrites instead of combining. Post the receive, then the send, wait for both, go on."}},
     {"ring_all_reduce",
      {"All-reduce = reduce-scatter followed by all-gather. On a ring that is 2(P-1) steps and 2(P-1)/P·N bytes "
       "sent per rank: 1.5·N on 4 ranks, and never more than 2·N however many ranks there are. That is why the "
       "ring is bandwidth-optimal, while its latency grows with P.",
       "Phase 1 is your ring_reduce_scatter (steps 0 .. P-2), phase 2 your ring_all_gather (steps P-1 .. 2P-3). "
       "Between them rank r owns the fully reduced chunk r, elements chunk_range(count, P, r). For ReduceOp::avg "
       "divide that chunk only, once, with finish_average: the all-gather then copies averages.",
       "Outline: run the reduce-scatter on the whole buffer with the op. Find your own chunk's element range and "
       "finish the average on that range alone (it does nothing for sum, max and min). Run the all-gather. Call "
       "no library collective: the grader reads every byte you send from the trace."}},
     {"all_reduce_by_reduce_scatter_all_gather",
      {"The identity AllReduce = AllGather after ReduceScatter, this time with the backend's own collectives. "
       "Reduce-scatter leaves each rank one fully reduced block, all-gather hands every block to everyone. The "
       "catch: the library wants P equal blocks, and count need not be a multiple of P.",
       "block = ceil(count / P) elements. Work in a padded copy of P·block elements (what the padding holds never "
       "mixes with real elements, and it is cut off at the end). comm.reduce_scatter turns the P blocks into your "
       "one reduced block, comm.all_gather turns everyone's block back into P blocks. Copy the first count "
       "elements back into buf.",
       "Outline: compute the block size. Make two ScratchBuffers beside buf.data (the buffer may live on a GPU): "
       "one of P blocks, one of a single block. copy_bytes your data into the large one. Reduce-scatter the large "
       "one into the small one with the op, all-gather the small ones into the large one, copy_bytes count "
       "elements back. Reduce nothing yourself: the grader compares bit for bit with comm.all_reduce."}},
     {"tree",
      {"Binomial trees need ceil(log2 P) steps per phase instead of the ring's P-1: the better choice for small "
       "messages, where the per-message latency dominates. tree_reduce sends partial results up the tree to the "
       "root, tree_broadcast sends the root's buffer down it, and tree_all_reduce is a reduce to rank 0 followed by "
       "a broadcast from rank 0.",
       "Number ranks relative to the root: vr = (rank - root) mod P, and back with (vr + root) mod P. Reduce, for "
       "k = 0, 1, .. with mask = 2^k below P: if bit k of vr is set, send your buffer to vr - mask and stop, else "
       "if vr + mask < P, receive-and-combine from vr + mask. Broadcast: your parent is vr minus its lowest set "
       "bit, your children are vr + m for each power of two m below that bit (below 2^ceil(log2 P) on the root) "
       "with vr + m < P. Tags kTagTreeReduce + k and kTagTreeBroadcast + k.",
       "Outline. tree_reduce: go through the masks 1, 2, 4, .. below P, combining from your child while your bit is "
       "clear, and at the first set bit send up and return. tree_broadcast: go up the masks to your lowest set "
       "bit and receive from your parent there (the root receives nothing), then come back down sending to every "
       "child that exists, largest subtree first. tree_all_reduce: reduce to 0, finish the average on rank 0 only, "
       "broadcast from 0. The grader counts messages: one to the parent, one per child."}},
     {"rhd_all_reduce",
      {"Recursive halving-doubling (Rabenseifner). Reduce-scatter by exchanging with a partner P/2 ranks away, "
       "then P/4, .. keeping half of your range each time, then all-gather by the same exchanges in reverse, "
       "doubling the range. 2·log2 P steps instead of the ring's 2(P-1), for the same 2(P-1)/P·N bytes.",
       "P' = floor_pow2(P), extra = P - P'. The buffer is cut into P' segments (chunk_range(count, P', i)) and "
       "each rank tracks the run of segments [lo, hi) it is responsible for. Halving: mask = P'/2 .. 1, partner vr "
       "XOR mask, keep the upper half of the run when your bit is set. Doubling: mask = 1 .. P'/2, swap runs with "
       "the partner. When P is no power of two, ranks r < 2·extra pair up first (even sends to odd, only odd ones "
       "go on, as vr = r/2) and the others are vr = r - extra. Tags kTagRhd + a running step number.",
       "Outline: (1) pre-step for the paired ranks. (2) Halving: at each mask split your run in two, "
       "receive-and-combine the half you keep from the partner while sending it the other half, then narrow your "
       "run. (3) Your run is now one fully reduced segment: finish the average on it. (4) Doubling: exchange your "
       "run for the partner's equally wide run beside it (below yours when your bit is set) and widen. (5) "
       "Post-step: the odd rank of each pair gives the result back. A virtual rank v maps back to 2v+1 when "
       "v < extra, else to v + extra."}},
     {"all_reduce_cost",
      {"How long does one step's gradient all-reduce take, and what share of the step is left for compute? Model "
       "one ring all-reduce of every gradient: a bandwidth part set by the bytes each GPU sends and a latency part "
       "paid once per ring step. No overlap with compute is assumed.",
       "G = parameters · bytes_per_param. Bytes per GPU = 2(P-1)/P · G. Time = 2(P-1) · latency (in seconds) + "
       "bytes per GPU / (bandwidth_GBps · 1e9). Efficiency = compute / (compute + time). On a single GPU nothing "
       "is sent and the time is 0.",
       "Outline: compute the gradient bytes, then the bytes per GPU with the ring factor, then the time (microseconds "
       "to seconds, GB/s to bytes per second with GB = 1e9), then the efficiency. Check yourself: 7B parameters in "
       "fp16 (14 GB) on 8 GPUs take about 41 ms at 600 GB/s and about 0.49 s at 50 GB/s, which with 2 s of compute "
       "is an efficiency of about 80 %."}},
     {"double_binary_tree",
      {"NCCL's double binary tree: two binary trees over the same ranks, each carrying half the data, built so "
       "that a rank that is a leaf in one is an inner node in the other. Then every rank's links carry about the "
       "same load, and the depth (the latency) grows with log2 P, the ring's with P.",
       "Tree 0 works on the lowest set bit b of the rank (b = r & -r). Parent: (r ^ b) | (b << 1), or r ^ b "
       "when that is >= P. Children: r - b/2 and r + b/2 (halve the step of the second until it is < P). Odd "
       "ranks (b = 1) have none. Rank 0 is the root: its one child, in children[1], is the largest power of two "
       "below P. Tree 1 for even P: rank r takes tree 0's links of P-1-r, each mapped back through P-1-x. For "
       "odd P: the links of (r-1) mod P, each mapped back by +1 mod P. -1 stays -1.",
       "Outline: (1) write tree 0 for one rank: find b, handle rank 0, compute the parent, then the two "
       "children. (2) For tree 1 map the rank into tree 0 (mirror or shift), ask tree 0, and map every link "
       "back. Check yourself on 12 ranks: tree 0 is 0 - 8, 8 - (4, 10), 4 - (2, 6), 10 - (9, 11), and tree 1 is 11 - "
       "3, 3 - (7, 1)."}},
     {"hierarchical_all_reduce",
      {"Between nodes the link is 10× slower than inside one. A flat ring sends 2(P-1)/P of the buffer over it. "
       "Reduce inside the node first, so that each of the node's G ranks owns 1/G of the node's sum, and only "
       "those chunks cross between nodes, every rank on its own NIC at once. Then spread the result inside "
       "the node again.",
       "Phase 1: your ring reduce-scatter over `node`, after which local rank l owns chunk_range(count, G, l). Phase "
       "2: "
       "a ring all-reduce over `rail` of that chunk only (a BufferView starting at its offset, of its count). "
       "Phase 3: your ring all-gather over `node`. Bytes per rank: 2(G-1)/G·N inside, 2(n-1)/n·N/G between. "
       "For avg: reduce as a sum in both tiers, and divide by G·n once, before the all-gather.",
       "Outline: (1) pick the sum for the partial reductions when op is avg. (2) reduce-scatter on node. "
       "(3) find your chunk from node.rank(), make a view of it, all-reduce it on rail. (4) finish_average of "
       "the chunk with the world size G·n. (5) all-gather on node. Check yourself: with 2 nodes of 4 ranks and "
       "8 MiB per rank, a rank sends 12 MiB inside its node and 2 MiB between nodes (a flat ring: 14 MiB, the boundary "
       "ranks all of it between)."}}}};

}  // namespace

std::span<const ExerciseHints> collectives_hints() { return kCollectivesHints; }

}  // namespace dtl::ex
