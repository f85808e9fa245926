# Mutants of the reference solutions (cmake -DMUTANT=name -DIN=solutions/<lab>.cpp -DOUT=copy.cpp -P
# mutate.cmake): each a mistake a learner makes that looks right where it is written — the
# kind issue 28 met (an average divided inside the reduce-scatter passed 15/15 while its lab
# failed). One for every exercise. tests/CMakeLists.txt (DTL_MUTANTS) links each copy in
# place of the original with the graded suites, which must fail the exercise (the grader
# never passes what the lab fails), and with tests/labs/lab_catches_mutant_test.cpp, whose
# run of the lab must fail too (the lab catches what the grader catches, issue 50).
#
# Each mutant replaces one anchor text of IN (and a second, anchor2, where the mistake needs
# one: an argument it no longer reads). When a solution changes so that an anchor is gone,
# the mutant stops building with a message naming it: update the anchor here.

if(MUTANT STREQUAL "reduce_scatter_divides")
  # ring_reduce_scatter finishes the average itself; ring_all_reduce and the lab divide again.
  set(anchor "    rx.wait();\n    tx.wait();\n  }\n}\n\nvoid ring_all_gather")
  set(mutation "    rx.wait();\n    tx.wait();\n  }\n  const ChunkRange own = chunk_range(buf.count, P, r);\n  finish_average(buf.at(own.offset), own.count, buf.dtype, op, P);\n}\n\nvoid ring_all_gather")
elseif(MUTANT STREQUAL "all_reduce_never_averages")
  # ring_all_reduce forgets the one division of an average (a sum passes every sum test).
  set(anchor "  finish_average(buf.at(mine.offset), mine.count, buf.dtype, op, P);\n  (ring_all_gather)(comm, buf);")
  set(mutation "  (void)mine;\n  (ring_all_gather)(comm, buf);")
elseif(MUTANT STREQUAL "naive_averages_twice")
  # Every rank averages what the root already averaged.
  set(anchor "    comm.recv(buf.data, buf.bytes(), 0, kTagNaiveBroadcast + r - 1, whole(P - 1 + r - 1, P));\n")
  set(mutation "    comm.recv(buf.data, buf.bytes(), 0, kTagNaiveBroadcast + r - 1, whole(P - 1 + r - 1, P));\n    finish_average(buf.data, buf.count, buf.dtype, op, P);\n")
elseif(MUTANT STREQUAL "all_gather_equal_chunks")
  # ring_all_gather sizes every chunk count / P, as if the count always divided: the last
  # elements of an uneven buffer never move.
  set(anchor "    const ChunkRange out = chunk_range(buf.count, P, send_chunk), in = chunk_range(buf.count, P, recv_chunk);\n    Request rx = comm.irecv(")
  set(mutation "    const std::size_t equal = buf.count / std::size_t(P);\n    const ChunkRange out{std::size_t(send_chunk) * equal, equal}, in{std::size_t(recv_chunk) * equal, equal};\n    Request rx = comm.irecv(")
elseif(MUTANT STREQUAL "one_f_one_b_all_forwards_first")
  # one_f_one_b runs every forward before any backward: GPipe's order under 1F1B's name. Its
  # weights are right; only its memory is not (issue 50: the lab once took this schedule's
  # own in-flight count as its prediction and passed it).
  set(anchor "  const int warmup = std::min(stages - stage - 1, micro_batches);\n")
  set(mutation "  const int warmup = micro_batches;  // every forward first\n")
elseif(MUTANT STREQUAL "split_backward_never_defers")
  # split_backward runs every W right after its B, whatever the lag: a valid schedule that trains
  # to the same weights, but ZB-H1's deferred W's (and their memory: P in flight on every stage)
  # are gone, and the cool-down's bubble with them.
  set(anchor "    while (int(waiting.size()) > lag) {\n")
  set(mutation "    while (!waiting.empty()) {\n")
  set(anchor2 "split_backward(const std::vector<pipeline::Action>& actions, int lag) {\n")
  set(mutation2 "split_backward(const std::vector<pipeline::Action>& actions, int /*lag*/) {\n")
elseif(MUTANT STREQUAL "vee_stage_loops")
  # vee_stage places the chunks as interleaving does (chunk · P + stage): the model loops around
  # the ranks instead of folding back, so the last layer (and the loss) is on stage P − 1, not 0.
  set(anchor "  return chunk == 0 ? stage : 2 * stages - 1 - stage;\n")
  set(mutation "  return chunk * stages + stage;  // the loop of interleaving\n")
elseif(MUTANT STREQUAL "dualpipe_pairs_last_stage_too")
  # dualpipe_pairs overlaps the last stage's first F0 with its B1 too: a valid schedule with the
  # same weights, but that F0 now waits for a gradient from the whole V (one pair more than DualPipe).
  set(anchor "    forward(0, !(i == 0 && s == P - 1));\n")
  set(mutation "    forward(0, true);\n")
elseif(MUTANT STREQUAL "merge_nan_for_two_empty_sides")
  # online_softmax_merge rescales both sides without asking whether either has seen a key:
  # exp(−∞ − −∞) is NaN when neither has (issue 50: the lab's runs never merge two empty sides).
  set(anchor "    if (top == -std::numeric_limits<float>::infinity()) continue;  // neither side has seen a key\n    // exp(−∞ − top) is 0: a side that has seen nothing adds nothing (and no NaN from −∞ − −∞).\n    const float a = m[p] == -std::numeric_limits<float>::infinity() ? 0.0f : std::exp(m[p] - top);\n    const float b = m2[p] == -std::numeric_limits<float>::infinity() ? 0.0f : std::exp(m2[p] - top);\n")
  set(mutation "    const float a = std::exp(m[p] - top), b = std::exp(m2[p] - top);\n")
elseif(MUTANT STREQUAL "library_pieces_never_stage_the_input")
  # all_reduce_by_reduce_scatter_all_gather reduce-scatters the padded copy without ever copying
  # the input into it: `ScratchBuffer padded(bytes, buf.data)` reads as if it were made from buf.
  set(anchor "  copy_bytes(padded.data(), buf.data, buf.bytes());\n")
  set(mutation "")
elseif(MUTANT STREQUAL "tree_reduce_overwrites")
  # tree_reduce receives each child's subtree with a plain recv: the child's partial replaces the
  # rank's own instead of adding to it (recv for recv_reduce, the call next to it).
  set(anchor "      comm.recv_reduce(buf.data, buf.count, buf.dtype, op, mod(vr + mask + root, P), kTagTreeReduce + k, whole(k, P));\n")
  set(mutation "      comm.recv(buf.data, buf.bytes(), mod(vr + mask + root, P), kTagTreeReduce + k, whole(k, P));\n")
  set(anchor2 "void tree_reduce(Comm& comm, BufferView buf, ReduceOp op, int root) {\n")
  set(mutation2 "void tree_reduce(Comm& comm, BufferView buf, ReduceOp /*op*/, int root) {\n")
elseif(MUTANT STREQUAL "rhd_divides_by_the_core")
  # rhd_all_reduce divides by the ranks of the halving (the power of two), forgetting the ranks the
  # pre-step folded in: right for 2, 4, 8 ranks, wrong for every other world size.
  set(anchor "    finish_average(buf.at(mine.offset), mine.count, buf.dtype, op, P);\n    rhd_doubling")
  set(mutation "    finish_average(buf.at(mine.offset), mine.count, buf.dtype, op, core);\n    rhd_doubling")
elseif(MUTANT STREQUAL "cost_counts_one_pass")
  # all_reduce_cost counts the reduce-scatter's (P-1)/P·N and forgets the all-gather's second pass.
  set(anchor "  a.bytes_sent_per_gpu = P > 1 ? 2.0 * (P - 1) / P * grad_bytes : 0.0;\n")
  set(mutation "  a.bytes_sent_per_gpu = P > 1 ? double(P - 1) / P * grad_bytes : 0.0;\n")
elseif(MUTANT STREQUAL "double_tree_one_tree_twice")
  # double_binary_tree builds the first tree for both halves: every sum is still right, but the
  # leaves never carry half of the traffic (NCCL's second tree makes them its inner nodes).
  set(anchor "{ return theory::double_tree_links(P, rank, tree); }")
  set(mutation "{\n  (void)tree;\n  return theory::double_tree_links(P, rank, 0);\n}")
elseif(MUTANT STREQUAL "double_tree_two_parents")
  # double_binary_tree fills the root's empty child slot with rank 1 (tree 0), which already has
  # parent 2: rank 1 has two parents, and the root waits for a message rank 1 never sends it.
  set(anchor "{ return theory::double_tree_links(P, rank, tree); }")
  set(mutation "{\n  theory::TreeLinks l = theory::double_tree_links(P, rank, tree);\n  if (tree == 0 && rank == 0 && P > 2) l.children[0] = 1;\n  return l;\n}")
elseif(MUTANT STREQUAL "double_tree_missing_leaf")
  # double_binary_tree drops a right child that is a leaf (an odd rank): the leaf still names its
  # parent, which never lists it, so its half of the data is never reduced nor sent back down.
  set(anchor "{ return theory::double_tree_links(P, rank, tree); }")
  set(mutation "{\n  theory::TreeLinks l = theory::double_tree_links(P, rank, tree);\n  if (l.child_count() == 2 && l.children[1] % 2 == 1) l.children[1] = -1;\n  return l;\n}")
elseif(MUTANT STREQUAL "hierarchical_whole_buffer_between_nodes")
  # hierarchical_all_reduce all-reduces the whole buffer on the rail, not its chunk: the sum is
  # still right (the all-gather overwrites the chunks it does not own), but every rank sends
  # 2(n-1)/n·N between nodes instead of N/G — the one thing the hierarchy is for.
  set(anchor "  (ring_all_reduce)(rail, chunk, partial);")
  set(mutation "  (ring_all_reduce)(rail, buf, partial);")
elseif(MUTANT STREQUAL "zigzag_adjacent_chunks")
  # zigzag_partition gives rank i two chunks, but the adjacent 2i and 2i+1: a contiguous split in
  # 2P pieces, so the last rank holds the most causal work again.
  set(anchor "  for (int c : {rank, 2 * ranks - 1 - rank})")
  set(mutation "  for (int c : {2 * rank, 2 * rank + 1})")
elseif(MUTANT STREQUAL "ring_step_wrong_direction")
  # ring_step sends to the left and receives from the right: every block still goes round, the
  # other way, so a rank computes on the block of the rank ahead, not the one behind.
  set(anchor "  Request send = comm.isend(current.data(), bytes, (r + 1) % P, tag, info);\n  Request recv = comm.irecv(next.data(), bytes, (r - 1 + P) % P, tag, info);\n")
  set(mutation "  Request send = comm.isend(current.data(), bytes, (r - 1 + P) % P, tag, info);\n  Request recv = comm.irecv(next.data(), bytes, (r + 1) % P, tag, info);\n")
elseif(MUTANT STREQUAL "bucket_keeps_its_first_begin")
  # assign_buckets grows a bucket's first_layer toward the front but never moves its begin: the
  # bucket all-reduces only the layer that opened it.
  set(anchor "    buckets.back().begin = begin[std::size_t(l)];\n")
  set(mutation "")
elseif(MUTANT STREQUAL "bucket_all_reduce_sums")
  # launch_ready_buckets all-reduces each bucket with sum: the gradients are P times too large.
  set(anchor "b.end - b.begin, grads.dtype, ReduceOp::avg));")
  set(mutation "b.end - b.begin, grads.dtype, ReduceOp::sum));")
elseif(MUTANT STREQUAL "wait_for_buckets_never_clears")
  # wait_for_buckets waits for every request but leaves them in `pending`: the next step's
  # launches pile onto the last step's finished requests.
  set(anchor "  for (Request& r : pending) r.wait();\n  pending.clear();\n")
  set(mutation "  for (Request& r : pending) r.wait();\n")
elseif(MUTANT STREQUAL "average_by_integer_division")
  # average_gradients scales by 1 / comm.size() in integers: 0 for every world size above one.
  set(anchor "scale_in_place(grads.data, n, grads.dtype, 1.0 / comm.size());")
  set(mutation "scale_in_place(grads.data, n, grads.dtype, 1 / comm.size());")
elseif(MUTANT STREQUAL "sync_counts_from_one")
  # sync_this_micro_batch counts micro-batches from 1: micro_batch == k never comes, so the
  # accumulated gradients are never all-reduced.
  set(anchor "return micro_batch == k - 1; }")
  set(mutation "return micro_batch == k; }")
elseif(MUTANT STREQUAL "shard_chunk_rounds_down")
  # shard_range's chunk is n / N rounded down: an uneven unit's last n mod N elements belong to
  # no rank and are never stepped.
  set(anchor "  const std::size_t chunk = (n + std::size_t(world) - 1) / std::size_t(world);  // chunk = ceil(n / N)\n")
  set(mutation "  const std::size_t chunk = n / std::size_t(world);  // chunk = n / N\n")
elseif(MUTANT STREQUAL "reduce_scatter_gradients_sums")
  # reduce_scatter_gradients reduce-scatters with sum: each shard's gradient is N times the mean.
  set(anchor "unit_grads.dtype, ReduceOp::avg);")
  set(mutation "unit_grads.dtype, ReduceOp::sum);")
elseif(MUTANT STREQUAL "shard_step_from_the_unit_start")
  # shard_step hands stages 1 and 2 the unit's first element, not the shard's: every rank steps
  # the first chunk with its own chunk's gradients.
  set(anchor "  void* params = params_are_sharded ? unit_params.data : unit_params.at(shard.begin);\n")
  set(mutation "  void* params = unit_params.data;\n  (void)params_are_sharded;\n")
elseif(MUTANT STREQUAL "all_gather_params_sends_block_zero")
  # all_gather_params gathers from the start of the unit: every rank sends block 0, not its own.
  set(anchor "comm.iall_gather(unit_params.at(std::size_t(comm.rank()) * chunk), unit_params.data,")
  set(mutation "comm.iall_gather(unit_params.data, unit_params.data,")
elseif(MUTANT STREQUAL "units_to_gather_ignores_issued")
  # units_to_gather returns the whole window every time, the units already in flight too: each
  # unit's parameters are gathered depth + 1 times.
  set(anchor "    if (!issued[std::size_t(order[i])]) units.push_back(order[i]);\n")
  set(mutation "    units.push_back(order[i]);\n  (void)issued;\n")
elseif(MUTANT STREQUAL "router_picks_the_least_likely")
  # route_top_k sorts the probabilities ascending (the comparator's default direction): each token
  # goes to its k least likely experts.
  set(anchor "[p](int a, int b) { return p[a] > p[b]; }")
  set(mutation "[p](int a, int b) { return p[a] < p[b]; }")
elseif(MUTANT STREQUAL "dispatch_in_token_order")
  # plan_dispatch counts and places every rank's rows right but never sorts the send order by
  # expert: the rows leave in token order, so they land at the wrong experts.
  set(anchor "  std::stable_sort(d.send_order.begin(), d.send_order.end(),\n                   [&r](int a, int b) { return r.expert[std::size_t(a)] < r.expert[std::size_t(b)]; });\n")
  set(mutation "")
elseif(MUTANT STREQUAL "combine_ignores_weights")
  # combine_rows adds the experts' outputs unweighted: the router's probabilities never scale them.
  set(anchor "    for (std::size_t c = 0; c < h; ++c) row[c] += w * back[i * h + c];\n")
  set(mutation "    (void)w;\n    for (std::size_t c = 0; c < h; ++c) row[c] += back[i * h + c];\n")
elseif(MUTANT STREQUAL "run_stage_computes_before_its_input")
  # run_stage computes a forward, then waits for its input: the receive looks like bookkeeping
  # that can come after, and the forward reads the activation buffer before it arrives.
  set(anchor "    std::vector<Request> inputs = post_input(a, ops);\n")
  set(mutation "    compute_and_send(a, ops, sends);  // the input is posted after\n    std::vector<Request> inputs = post_input(a, ops);\n")
  set(anchor2 "    for (Request& r : inputs) r.wait();\n    compute_and_send(a, ops, sends);\n")
  set(mutation2 "    for (Request& r : inputs) r.wait();\n")
elseif(MUTANT STREQUAL "row_slice_bias_on_every_rank")
  # row_parallel_slice gives every rank the bias: the all-reduce adds it T times.
  set(anchor "  const int bias_end = rank == 0 ? out : 0;  // the sum must contain the bias once\n")
  set(mutation "  const int bias_end = out;\n  (void)rank;\n")
elseif(MUTANT STREQUAL "f_backward_averages")
  # f's backward all-reduces with avg, as DDP's gradients do: dL/dx is T times too small.
  set(anchor "    g.comm.all_reduce(dx_full, dx, full_elems, DType::f32, ReduceOp::sum);\n")
  set(mutation "    g.comm.all_reduce(dx_full, dx, full_elems, DType::f32, ReduceOp::avg);\n")
elseif(MUTANT STREQUAL "g_forward_averages")
  # g's forward averages the partial outputs instead of summing them: y is T times too small.
  set(anchor "  (f_backward)(g, y_partial, y, full_elems);  // g's forward is f's backward: the same collective\n")
  set(mutation "  if (!sequence_parallel(g)) return g.comm.all_reduce(y_partial, y, full_elems, DType::f32, ReduceOp::avg);\n  (f_backward)(g, y_partial, y, full_elems);\n")
elseif(MUTANT STREQUAL "column_backward_reduces_first")
  # column_parallel_backward runs f's backward before the layer's: f comes first in the forward,
  # but a backward runs in reverse order, so it all-reduces a dx_full not yet computed.
  set(anchor "  math.backward(x_in, layer.weight, dy_local, dx_full, layer.weight_grad, layer.bias_grad, rows, layer.in, layer.out,\n                accumulate);\n  (f_backward)(g, dx_full, dx, std::size_t(rows) * std::size_t(layer.in));\n")
  set(mutation "  (f_backward)(g, dx_full, dx, std::size_t(rows) * std::size_t(layer.in));\n  math.backward(x_in, layer.weight, dy_local, dx_full, layer.weight_grad, layer.bias_grad, rows, layer.in, layer.out,\n                accumulate);\n")
elseif(MUTANT STREQUAL "row_forward_drops_the_bias")
  # row_parallel_forward leaves the bias out, meaning to add it after the all-reduce, and never does.
  set(anchor "  math.forward(x_local, layer.weight, layer.bias, y_partial, rows, layer.in, layer.out);\n  (g_forward)")
  set(mutation "  math.forward(x_local, layer.weight, nullptr, y_partial, rows, layer.in, layer.out);\n  (g_forward)")
elseif(MUTANT STREQUAL "cross_entropy_local_max")
  # vocab_parallel_cross_entropy shifts by each rank's own max (it is only for stability, the
  # learner reasons): the ranks' sums of exponentials then add terms on different scales.
  set(anchor "  tp.all_reduce(row_max.data(), row_max.data(), n, DType::f32, ReduceOp::max);\n")
  set(mutation "")
else()
  message(FATAL_ERROR "mutate.cmake: no mutant '${MUTANT}'")
endif()

file(READ "${IN}" text)
foreach(pair "anchor;mutation" "anchor2;mutation2")
  list(GET pair 0 a)
  list(GET pair 1 b)
  if(NOT DEFINED ${a})
    continue()
  endif()
  string(FIND "${text}" "${${a}}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "mutant ${MUTANT}: its ${a} is no longer in ${IN}; update tests/grade/mutate.cmake")
  endif()
  string(REPLACE "${${a}}" "${${b}}" text "${text}")
endforeach()
file(WRITE "${OUT}" "${text}")
