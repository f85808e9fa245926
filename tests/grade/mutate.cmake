# Mutants of the reference solutions (cmake -DMUTANT=name -DIN=solutions/<lab>.cpp -DOUT=copy.cpp -P
# mutate.cmake): each a mistake a learner makes that looks right where it is written — the
# kind issue 28 met (an average divided inside the reduce-scatter passed 15/15 while its lab
# failed). tests/CMakeLists.txt links each copy in place of the original with the lab's
# graded suites, which must fail: the grader never passes what the lab fails.
#
# Each mutant replaces one anchor text of IN. When a solution changes so that an anchor is
# gone, the mutant stops building with a message naming it: update the anchor here.

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
elseif(MUTANT STREQUAL "merge_nan_for_two_empty_sides")
  # online_softmax_merge rescales both sides without asking whether either has seen a key:
  # exp(−∞ − −∞) is NaN when neither has (issue 50: the lab's runs never merge two empty sides).
  set(anchor "    if (top == -std::numeric_limits<float>::infinity()) continue;  // neither side has seen a key\n    // exp(−∞ − top) is 0: a side that has seen nothing adds nothing (and no NaN from −∞ − −∞).\n    const float a = m[p] == -std::numeric_limits<float>::infinity() ? 0.0f : std::exp(m[p] - top);\n    const float b = m2[p] == -std::numeric_limits<float>::infinity() ? 0.0f : std::exp(m2[p] - top);\n")
  set(mutation "    const float a = std::exp(m[p] - top), b = std::exp(m2[p] - top);\n")
else()
  message(FATAL_ERROR "mutate.cmake: no mutant '${MUTANT}'")
endif()

file(READ "${IN}" text)
string(FIND "${text}" "${anchor}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "mutant ${MUTANT}: its anchor is no longer in ${IN}; update tests/grade/mutate.cmake")
endif()
string(REPLACE "${anchor}" "${mutation}" text "${text}")
file(WRITE "${OUT}" "${text}")
