// The hints of every exercise, three levels each (exercises/hints.h). Edit here, in one
// place: the stubs point to `dtlab grade --exercise ID --hint N`, and the grader prints
// the level asked under each failing exercise. Prose only: name functions, indices and
// formulas, never write a line of the solution.
#include "exercises/hints.h"

#include <array>

namespace dtl::ex {

namespace {

constexpr std::array<ExerciseHints, 26> kHints = {{
    // ---- collectives (exercises/collectives.h) ----------------------------------------
    {"naive_all_reduce",
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
    // ---- DDP (exercises/ddp.h) -----------------------------------------------------------
    {"assign_buckets",
     {"DDP does not all-reduce each gradient alone: it groups layers into buckets (25 MiB by default in PyTorch) "
      "and all-reduces a bucket as soon as backward has produced all of its gradients. Backward runs from the "
      "last layer to the first, so buckets fill in that order, whole layers at a time.",
      "Walk l = L-1 down to 0. Layer l occupies [begin_l, begin_l + layer_floats[l]), where begin_l is the sum of "
      "the sizes of layers 0 .. l-1. Open a new bucket when there is none yet or the open one already holds at "
      "least capacity_floats. Adding layer l to a bucket moves its first_layer to l and its begin to begin_l (a "
      "bucket grows toward the start of the buffer), while last_layer and end stay those of the layer it opened "
      "with.",
      "Outline: compute where every layer starts with a running sum. Go through the layers backwards. For each, "
      "check whether the open bucket is full (end - begin has reached the capacity). If it is, or there is no "
      "bucket yet, open one covering just this layer, else extend the open one down to this layer. Return the "
      "buckets in the order you opened them: the one holding the last layer first, and together they tile the "
      "buffer without gaps."}},
    {"launch_ready_buckets",
     {"Overlap: a bucket's all-reduce can run while backward computes the layers before it. Without overlap a "
      "step takes T_forward + T_backward + T_comm + T_update, with it about T_forward + max(T_backward, T_comm) + "
      "T_update. So start a bucket's all-reduce the moment its last gradient is ready, and never wait for it here.",
      "Backward finishes layers L-1, .., 0, so a bucket is complete when its first_layer (its lowest layer) is "
      "done. For every bucket whose first_layer equals layer, start comm.iall_reduce in place over its elements "
      "[begin, end): address grads.at(begin), end - begin elements, grads.dtype, ReduceOp::avg. Keep the "
      "returned Request in pending.",
      "Outline: go through the buckets and skip those this layer does not complete. For each one it completes, "
      "start a non-blocking all-reduce of the bucket's range, in place, averaging, in the buffer's own dtype, and "
      "append its request to pending. Return without waiting: the grader checks after every layer that exactly "
      "the completed buckets are in flight."}},
    {"wait_for_buckets",
     {"Before the optimizer step every launched all-reduce must have finished, or the step would read gradients "
      "that are only partly averaged. What is still in flight here is the exposed communication of the timeline.",
      "Every Request has wait(), which returns once its transfer is complete (and rethrows its error). Afterwards "
      "pending must be empty, ready for the next step.",
      "Outline: wait on every request in pending (the order does not matter), then empty the vector."}},
    {"average_gradients",
     {"Every rank computed gradients on its own part of the global batch, and all ranks must step with the mean. "
      "A sum all-reduce followed by one division by P gives it: what ReduceOp::avg does inside, and what naive "
      "DDP does tensor by tensor.",
      "comm.all_reduce in place over the first n elements with ReduceOp::sum in grads.dtype, then scale the same n "
      "elements by 1/P with scale_in_place (core/comm/dtype.h), which handles fp32, bf16 and fp16 alike.",
      "Outline: one library all-reduce of the n gradients, summing, in place. Then one scaling by one over the "
      "number of ranks. Do not widen bf16 to float and back yourself: the bf16 test allows one rounding per "
      "operation, in the buffer's own dtype."}},
    {"sync_this_micro_batch",
     {"Gradient accumulation: with k micro-batches per step, gradients add up locally (PyTorch's no_sync) and are "
      "synchronized once per step, so a step costs one all-reduce instead of k.",
      "Micro-batches are numbered 0 .. k-1. Only the last one, index k-1, synchronizes: true for it, false for "
      "every other.",
      "Outline: a single comparison of micro_batch with the index of the last micro-batch. The grader tries every "
      "micro-batch of k = 1 .. 6."}},
    // ---- ZeRO (exercises/zero.h) ---------------------------------------------------------
    {"shard_range",
     {"ZeRO removes the copies that plain data parallelism keeps on every rank: each of the N ranks owns one "
      "piece of every sharding unit and keeps the optimizer state (and from stage 2 the gradients, from stage 3 "
      "the parameters) of that piece only. Reduce-scatter and all-gather want pieces of one size, so the unit "
      "is padded up to N equal chunks and the last pieces may hold padding, or nothing real at all.",
      "chunk = ceil(n / N), in integers (n + N - 1) / N. Rank r's chunk covers [r·chunk, (r+1)·chunk) of the "
      "padded unit, and its real elements are that interval cut off at n: begin = min(r·chunk, n), end = "
      "min((r+1)·chunk, n). Example: n = 10, N = 4 gives chunk 3, and rank 3 owns [9, 10).",
      "Outline: compute the chunk with a rounding-up division (never floating point). Clamp the start and the "
      "end of the rank's interval to n, so a rank past the end gets an empty range with begin = end = n. The "
      "grader checks that the ranges tile [0, n) in rank order and that chunk·N >= n > (chunk - 1)·N."}},
    {"reduce_scatter_gradients",
     {"ZeRO-2: after backward a rank only steps its own shard, so it needs only its own chunk of the averaged "
      "gradients. A reduce-scatter delivers exactly that and sends about half the bytes of an all-reduce, which "
      "is a reduce-scatter followed by an all-gather. Like DDP's buckets, it runs while backward goes on.",
      "NCCL's convention: the input holds N·chunk elements (the padded unit), the output chunk elements, and "
      "rank r receives the reduction of block r. Call comm.ireduce_scatter with unit_grads.data as the input, "
      "shard_grads as the output, chunk as the receive count, the buffer's own dtype and ReduceOp::avg.",
      "Outline: a single non-blocking library call, then hand its Request back to the caller. Do not wait on "
      "it, do not all-reduce, and do not pass the whole unit's length as the count: the count is per rank. The "
      "grader reads one reduce-scatter of N·chunk elements from each rank's comm stream and checks that the "
      "function returns before the other ranks have joined."}},
    {"shard_step",
     {"The optimizer steps only what this rank owns: the real elements of its chunk, never the padding, which "
      "no parameter stands behind. Where those parameters live depends on the stage: stages 1 and 2 keep the "
      "whole padded unit on every rank, stage 3 keeps only the rank's own chunk.",
      "count = end - begin. The gradients are shard_grads itself, which starts at the rank's first owned "
      "element. The parameters: with the whole unit present they start at element begin of unit_params "
      "(unit_params.at(begin), so bf16 is addressed right), and with params_are_sharded the buffer is the "
      "local chunk, so they start at its element 0.",
      "Outline: pick the parameter address from the stage, take the gradient address as given, and count the "
      "owned real elements. A rank with an empty range steps zero elements. The grader checks every rank of "
      "a unit of 10 on 4 ranks and of 2 on 4 ranks, for both stages and for fp32 and bf16."}},
    {"all_gather_params",
     {"After the step each rank holds fresh values for its chunk only, but the next forward needs every "
      "parameter. An all-gather hands every rank's chunk to all the others. In place, each rank's input is "
      "its own chunk inside the unit, so nothing is copied on the side.",
      "comm.iall_gather with the input at element rank·chunk of the unit (unit_params.at of that index), the "
      "output at unit_params.data, send count chunk (per rank, not the whole unit) and the buffer's dtype. "
      "Block q of the output is rank q's input, so the rank's own block is already in place.",
      "Outline: work out where this rank's chunk begins, start one non-blocking all-gather from there into the "
      "whole padded unit, and return its Request without waiting. The grader fills only each rank's own chunk, "
      "leaves the rest NaN, and expects every rank to end with the whole unit after the wait."}},
    {"units_to_gather",
     {"ZeRO-3 gathers a unit's parameters just before they are needed and frees them after. Waiting for every "
      "gather would leave the GPU idle, so the gathers of the next few units are issued early (prefetch) and "
      "run while the current unit computes. Backward walks the units in the opposite order, so prefetching "
      "follows the compute order, not the unit numbers.",
      "The window is positions position .. position + depth of the order, stopping at the end of the order. The "
      "units to issue are order[i] for i in that window whose issued entry is still false. With depth 0 the "
      "window is the current position alone.",
      "Outline: find where the window ends (never past the last position), walk the positions from the current "
      "one to that end, and collect each unit not issued yet, keeping the walk's order. The grader runs whole "
      "forward and backward passes at depths 0 to 7 and checks that each unit is issued once and in time."}},
    // ---- Pipeline (exercises/pipeline.h) ------------------------------------------------
    {"one_f_one_b",
     {"GPipe runs every forward before any backward, so a stage holds the activations of all M micro-batches. "
      "1F1B starts each micro-batch's backward as early as the pipeline allows: after a short warm-up a stage "
      "alternates one forward and one backward, so it never holds more than P - stage micro-batches, whatever M "
      "is. The bubble stays the same as GPipe's, the memory does not grow with M.",
      "Warm-up: min(P - stage - 1, M) forwards, micro-batches 0, 1, ... Steady state: while forwards remain, one "
      "forward of the next micro-batch, then one backward of the oldest micro-batch not yet backwarded. Cool-down: "
      "the remaining backwards in order. Every action has chunk 0. The last stage has no warm-up: it alternates "
      "from the start.",
      "Outline: keep two counters, the next micro-batch to forward and the next to backward. Emit the warm-up "
      "forwards, then loop while the forward counter is below M emitting a forward then a backward, then emit "
      "backwards until that counter reaches M. The grader compares with tables written by hand for P = 4, M = 8 "
      "and checks that no stage ever holds more than P - stage micro-batches."}},
    {"run_stage",
     {"A stage computes in the schedule's order and talks only to its neighbours: activations go forward, their "
      "gradients come back. The danger is waiting on a send: in 1F1B a stage may be sending an activation on while "
      "its neighbour is sending a gradient back, and if both wait for their send to be received, neither ever "
      "receives. Post sends and move on, wait only for what you need to compute.",
      "For a forward of micro-batch m on chunk c: if has_previous(c), wait for recv_activation(m, c), call "
      "forward(m, c), if has_next(c), post send_activation(m, c) and keep its Request in sends. For a backward: if "
      "has_next(c), wait for recv_gradient(m, c), call backward(m, c), if has_previous(c), post send_gradient(m, "
      "c) into sends. A weight action only calls weight(m, c).",
      "Outline: one loop over the actions, a branch per op. Each receive is posted and waited right before the "
      "compute that needs it, each send is posted right after the compute that produced it and its request is "
      "appended, never waited. The lab waits for the sends after the step. The grader runs 1F1B, GPipe and "
      "interleaved schedules on 4 thread ranks with a watchdog and checks the data that arrives."}},
    // ---- Tensor parallelism (exercises/tensor_parallel.h) --------------------------------
    {"tp_slices",
     {"Tensor parallelism splits each weight matrix across the T ranks of a group instead of copying it. The "
      "curriculum draws Y = X·W cut into vertical or horizontal strips. Here W is nn.Linear's [out × in]: a "
      "column-parallel rank keeps a block of rows of W (some output features, whole), a row-parallel rank a "
      "block of columns of W (some input features, for every output), and the T partial outputs are summed.",
      "Column-parallel, rank r of T: W rows r·out/T up to (r+1)·out/T, every column 0 .. in, and the bias "
      "elements of those same rows. Row-parallel: every row 0 .. out, columns r·in/T up to (r+1)·in/T. The "
      "bias of a row-parallel layer is added after the sum, so rank 0 holds all of it, 0 .. out, and every "
      "other rank an empty range. All ranges are half-open, end excluded.",
      "Outline: divide the split dimension by T to get the block size, multiply by the rank for the start and "
      "by rank plus one for the end, and fill the other dimension whole. For the row-parallel bias, pick the "
      "whole range or an empty one depending on whether the rank is 0. The grader compares with ranges written "
      "by hand and checks that the T slices hold every element of W and of the bias exactly once."}},
    {"f_operator",
     {"Megatron's f sits in front of a column-parallel layer. Forward, every rank needs all of x, which is "
      "already replicated: f does nothing. Backward, each rank's slice of the layer saw all of x, so each holds "
      "only a partial dL/dx and the T partials must be summed: one all-reduce. Under sequence parallelism the "
      "activations outside the layer are split by rows, so forward becomes an all-gather and backward a "
      "reduce-scatter, the two halves of that all-reduce.",
      "Plain forward: hand back the input pointer x, untouched. Sequence-parallel forward: comm.all_gather from "
      "x, which holds full_elems / T floats, into x_full, then hand back x_full. Plain backward: "
      "comm.all_reduce of dx_full into dx, full_elems floats, ReduceOp::sum. Sequence-parallel backward: "
      "comm.reduce_scatter of dx_full into dx with a receive count of full_elems / T. Counts are per rank for "
      "the gather and the scatter, DType::f32 throughout.",
      "Outline: in each direction, branch on g.mode. Forward in plain mode is a single return of the input. "
      "Every other case is exactly one library collective on g.comm, never two and never point-to-point sends. "
      "The grader runs T = 1, 2 and 4 in both modes, compares with sums computed on one rank and reads each "
      "rank's collectives and their bytes from the trace."}},
    {"g_operator",
     {"g is f's mirror, after a row-parallel layer. Forward, each rank holds a partial output over its slice of "
      "the input features, and the layer's output is their sum: one all-reduce. Backward, the gradient of that "
      "sum reaches every partial unchanged, so g passes dy through. So a Megatron MLP, column then row, "
      "communicates once forward (g) and once backward (f).",
      "Plain forward: comm.all_reduce of y_partial into y, full_elems floats, summed. Sequence-parallel "
      "forward: comm.reduce_scatter of y_partial into y, receive count full_elems / T, so each rank keeps its "
      "rows of the sum. Plain backward: hand back dy itself. Sequence-parallel backward: comm.all_gather of "
      "dy, which holds full_elems / T floats, into dy_full, and hand back dy_full.",
      "Outline: g's forward is the same collective as f's backward, and g's backward the same as f's forward, "
      "so you may call your f functions with the buffers in the right places. One collective per call at "
      "most. The grader checks the sums against a single-rank computation and the collectives by name and "
      "bytes, for T = 1, 2 and 4, plain and sequence parallel."}},
    {"column_parallel_linear",
     {"A column-parallel linear computes some output features completely: f, then an ordinary local nn.Linear "
      "with the rank's rows of W and of the bias. No sum is needed after it. Backward, the local gradients of W "
      "and b are already the right slices of the full layer's, but dL/dx is only this slice's share, which f's "
      "backward sums over the ranks.",
      "Forward: x_in is what f's forward returns for x (x_full as the workspace, rows·in floats), then "
      "math.forward of x_in with layer.weight and layer.bias into y_local, over all rows, with layer.in and "
      "layer.out. Hand back x_in. Backward: math.backward with x_in, layer.weight and dy_local, writing the "
      "partial dL/dx into dx_full, the gradients into layer.weight_grad and layer.bias_grad, passing "
      "accumulate on. Then f's backward from dx_full into dx, rows·in floats.",
      "Outline: forward is two calls, f then the local math, returning what the math multiplied so the lab "
      "can keep it for backward. Backward is two calls, the local math then f's backward. The element count "
      "handed to f is always the full rows times in, whatever the mode: f divides it by T itself. The grader "
      "compares with the full layer computed on one rank in double."}},
    {"row_parallel_linear",
     {"A row-parallel linear multiplies the rank's slice of the input features by its columns of W. Each rank "
      "gets a partial output over all the output features, and g's forward sums them. The bias must appear "
      "once in that sum, which is why only rank 0 holds it. Backward, g hands dy to every rank, and each "
      "computes the gradients of its own slice.",
      "Forward: math.forward of x_local with layer.weight and layer.bias into y_partial, over all rows, then "
      "g's forward from y_partial into y with rows·out floats. Backward: dy_all is what g's backward returns "
      "for dy (dy_full as its workspace, rows·out floats), then math.backward with x_local, layer.weight and "
      "dy_all, writing dx_local, layer.weight_grad and layer.bias_grad, passing accumulate on.",
      "Outline: the column-parallel layer's two steps in the other order. Forward computes locally then "
      "communicates, backward communicates then computes. Pass layer.bias as it is: null on the ranks that "
      "hold none. The bias gradient comes out whole on every rank, because every rank sees the same dy. The "
      "grader compares y, dx, dW and db with the full layer's, plain and sequence parallel."}},
    {"vocab_parallel_cross_entropy",
     {"The output layer is split over the vocabulary, so each rank holds only some columns of the logits. "
      "Gathering them would cost rows·vocab floats. Softmax cross-entropy needs just three numbers per row "
      "from across the ranks: the row's max, the sum of exp(logit - max), and the target's logit. Three "
      "all-reduces of rows floats, whatever T, and the max shift keeps exp from overflowing.",
      "Per row i: m = max over ranks of the local max (ReduceOp::max). s = sum over ranks of the local sum of "
      "exp(logit - m). t = the target's logit minus m, from the rank where targets[i] - vocab_begin lies in "
      "0 .. vocab_local - 1, zero elsewhere, summed. loss_i = log s - t. The loss is the mean of loss_i. The "
      "gradient of a local entry v is (exp(logit - m) / s - 1 if v is the target else 0) / rows.",
      "Outline: one pass for each row's local max, all-reduce them. One pass for the exponentials, which you "
      "can keep in dlogits_local, their row sums and the owned target logits, then all-reduce both arrays. "
      "A last pass turns the exponentials into the gradient, subtracts one over rows at an owned target, and "
      "adds up the loss in double. The grader uses logits up to 120 and reads exactly three all-reduces."}},
}};

}  // namespace

std::string_view hint_level_name(int level) {
  switch (level) {
    case 1: return "the idea";
    case 2: return "the formula or the indices";
    case 3: return "an outline in words";
    default: return "";
  }
}

std::span<const ExerciseHints> exercise_hints() { return kHints; }

std::string_view exercise_hint(std::string_view id, int level) {
  if (level < 1 || level > kHintLevels) return {};
  for (const ExerciseHints& h : kHints)
    if (h.id == id) return h.level[level - 1];
  return {};
}

}  // namespace dtl::ex
