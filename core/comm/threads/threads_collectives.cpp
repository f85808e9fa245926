// Library collectives of the threads backend: the fast, shared-memory path.
//
// Every member publishes its buffer pointers, meets the others at a barrier, does its
// share of the work reading the others' buffers directly, and meets them again before
// anyone may touch its buffers. For all_reduce, member r owns chunk r: it reads chunk r
// of all P inputs once and writes the result into chunk r of all P outputs once. That is
// 2·P·N bytes of memory traffic for the whole world, the least any algorithm can move
// (the ceiling in core/theory/ceiling.h).
//
// Reductions always combine inputs in rank order 0..P-1 and each chunk is reduced by one
// thread only, so every rank receives identical bits.
#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <thread>

#include "core/comm/chunking.h"
#include "core/comm/threads/threads_comm.h"
#include "core/comm/wait_words.h"
#include "core/memory/device_ops.h"
#include "core/theory/collectives.h"

namespace dtl::threads {

namespace {

const char* at(const void* p, std::size_t byte_offset) { return static_cast<const char*>(p) + byte_offset; }
char* at(void* p, std::size_t byte_offset) { return static_cast<char*>(p) + byte_offset; }

// The collective this comm stream runs now, in the lab's words ("" without): the watchdog
// says what the stream's barrier is for.
thread_local std::string t_stream_words;

void sync_members(Group& g, int me, const char* what) {
  const std::string plain = std::string(what) + " barrier";
  g.barrier.arrive_and_wait(g.u, g.members, g.members[std::size_t(me)], Waiter::comm,
                            t_stream_words.empty()
                                ? plain + " (waiting for the rest of its group)"
                                : t_stream_words + " (" + plain + ", waiting for the rest of its group)");
}

// Entry: after it, members read each other's published buffers. Counted from before the
// barrier, so no member is ever reading without being counted.
void enter(Group& g, int me, const char* what) {
  g.inside.fetch_add(1);
  try {
    sync_members(g, me, what);
  } catch (...) {
    g.inside.fetch_sub(1);
    throw;
  }
}

// Exit: nobody may reuse or free its buffers while a peer still reads them. On an abort
// the barrier gives up at once, so wait for the members still inside (they only compute,
// never block) before letting the caller go.
void leave(Group& g, int me, const char* what) {
  g.inside.fetch_sub(1);
  try {
    sync_members(g, me, what);
  } catch (const Aborted&) {
    while (g.inside.load() > 0) std::this_thread::yield();
    throw;
  }
}

// Chunk c of every input, combined in rank order, written to chunk c of every output
// (all_reduce) or of the root's output only (reduce). One pass: each input byte is read
// once and each output byte written once.
void reduce_chunk_to_all(Group& g, ChunkRange c, DType t, ReduceOp op, bool to_all, int root) {
  const std::size_t es = dtype_size(t), P = g.members.size();
  std::vector<const void*> inputs(P);
  std::vector<void*> outputs;
  bool all_out_of_place = true;
  for (std::size_t q = 0; q < P; ++q) {
    inputs[q] = at(g.slots[q].send, c.offset * es);
    if (!to_all && int(q) != root) continue;
    outputs.push_back(at(g.slots[q].recv, c.offset * es));
    all_out_of_place = all_out_of_place && g.slots[q].recv != g.slots[q].send;
  }
  DeviceOps& ops = device_ops_for(inputs[0], outputs[0]);
  if (&ops != &host_ops()) {  // on a GPU
    if (op != ReduceOp::avg)  // one pass: every input read once, every output written once
      return ops.reduce_many_to(outputs.data(), int(outputs.size()), inputs.data(), int(P), c.count, t, op);
    ops.reduce_many(outputs[0], inputs.data(), int(P), c.count, t, op);  // avg: the sum, one division, then copies
    ops.scale(outputs[0], c.count, t, 0.0, int(P));
    for (std::size_t k = 1; k < outputs.size(); ++k) ops.copy(outputs[k], outputs[0], c.count * es);
    return;
  }
  // Out of place, streaming stores write an output line without reading it first (no
  // read-for-ownership). In place the line was just read and sits in cache: plain stores.
  reduce_to_all(outputs.data(), int(outputs.size()), inputs.data(), int(P), c.count, t, op, int(P), all_out_of_place);
  if (all_out_of_place) store_fence();  // make the streamed data visible before the closing barrier
}

}  // namespace

ThreadsComm::~ThreadsComm() {
  if (queue_) {  // let the comm stream finish what was queued, then exit (joined by the runner)
    std::lock_guard lock(queue_->mu);
    queue_->stop = true;
    queue_->cv.notify_all();
  }
}

namespace {

// What the collective would take on the emulated links: one tier, or NCCL's hierarchical
// form over the nodes the group spans (the most members on one node taken as every node's).
double modeled_collective_time(const Universe& u, const std::vector<int>& members, CollectiveKind kind, double bytes) {
  const theory::Link intra{u.link().alpha_s(), u.link().beta_Bps()};
  const NodeLayout& nodes = u.nodes();
  if (!nodes.two_tier()) return theory::library_collective_time(kind, int(members.size()), bytes, intra);
  std::map<int, int> per_node;  // node → members on it
  for (const int g : members) ++per_node[nodes.node_of(g)];
  int most = 0;
  for (const auto& [node, count] : per_node) most = std::max(most, count);
  const theory::Link inter{nodes.inter.alpha_s(), nodes.inter.beta_Bps()};
  return theory::two_tier_collective_time(kind, int(per_node.size()), most, bytes, intra, inter);
}

// "all_gather #3 (4096 B, on its comm stream)"; with the lab's words (wait_words.h) first,
// "for the gather of layer 3's shards (all_gather #3, 4096 B, on its comm stream)".
std::string collective_wait_text(const std::string& words, const char* name, std::uint64_t seq, std::size_t bytes,
                                 const char* where) {
  const std::string head = std::string(name) + " #" + std::to_string(seq);
  const std::string detail = std::to_string(bytes) + " B, " + where;
  return words.empty() ? head + " (" + detail + ")" : words + " (" + head + ", " + detail + ")";
}

}  // namespace

Request ThreadsComm::run_collective(CollectiveKind kind, std::size_t bytes, std::function<void()> body,
                                    double link_bytes) {
  const char* name = collective_kind_name(kind);
  wait_for_device_work_of_this_thread();  // the comm stream reads what this thread's kernels wrote
  Universe& u = group_->u;
  const int me = global_rank();
  const int n = u.rank_state(me).collectives_posted.fetch_add(1);
  const FaultPlan::Action act = u.faults().at(StepUnit::collectives, me, n);
  if (act == FaultPlan::Action::fail)
    throw Error("injected fault on rank " + std::to_string(me) + " at its " + FaultPlan::operation(name, n) +
                " (--inject-fault)");
  if (act == FaultPlan::Action::hang)
    u.wait_until(
        me, Waiter::main, [] { return false; },
        "nothing: it stopped communicating on purpose before its " + FaultPlan::operation(name, n) +
            " (--inject-hang)");
  const std::uint64_t seq = collective_seq_++;
  const Role role = library_collective_role(kind);
  const std::string words = collective_wait_words(role);  // what the watchdog says it waits for
  auto what = [&](const char* where) { return collective_wait_text(words, name, seq, bytes, where); };
  // A collective of a group of one moves nothing (a 1-rank reference's tensor-parallel f/g):
  // not a step to wait for.
  if (StepGate* gate = u.gate(); gate && gate->unit() == StepUnit::collectives && size() > 1)
    await_release(*gate, seq, what("waiting for the step gate"));
  auto req = std::make_shared<ThreadRequest>(u, me, what("on its comm stream"));
  req->collective = true;
  Trace* tr = u.trace();
  Event ev{.bytes = bytes,
           .rank = me,
           .label = tr ? tr->label(name, role) : std::uint16_t(0),
           .kind = EventKind::collective,
           .stream = kStreamComm};
  stamp_group(ev);
  if (!queue_) queue_ = u.start_worker();
  // On an emulated link the collective takes at least what NCCL's algorithm would need there.
  const double modeled_bytes = link_bytes >= 0 ? link_bytes : double(bytes);
  const double modeled_s = u.link().active() ? modeled_collective_time(u, group_->members, kind, modeled_bytes) : 0.0;
  StepGate* gate = u.gate();
  if (gate) gate->work_begin(me);  // a stepped world is not quiet while this runs
  queue_->push([req, body = std::move(body), tr, ev, me, modeled_s, &u, gate, words]() mutable {
    const std::int64_t t0 = tr ? tr->now_ns() : 0;
    const auto start = std::chrono::steady_clock::now();
    std::exception_ptr error;
    t_stream_words = words;
    try {
      body();
      const auto until = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                     std::chrono::duration<double>(modeled_s));
      u.sleep_until(me, until);
    } catch (...) { error = std::current_exception(); }
    const std::int64_t t1 = tr ? tr->now_ns() : 0;
    if (tr) {
      ev.begin_ns = t0;
      ev.end_ns = t1;
      tr->log(me, kStreamComm).append(ev);
    }
    req->complete(error, t1);
    if (gate) gate->work_end(me);
  });
  return Request(req);
}

void ThreadsComm::await_release(StepGate& gate, std::uint64_t seq, const std::string& what) {
  Group& g = *group_;
  bool last = false;
  {
    std::lock_guard lock(g.gate_mu);
    last = ++g.gate_arrived[seq] == int(g.members.size());
    if (last) g.gate_arrived.erase(seq);
  }
  if (last) {  // the whole group is here: the collective is ready to move
    auto release = [gp = group_, seq] {
      {
        std::lock_guard lock(gp->gate_mu);
        gp->gate_released = std::max(gp->gate_released, seq + 1);
      }
      for (int m : gp->members) gp->u.wake(m);
    };
    // Smallest key first: the group with the lowest first member, then the earliest.
    const std::uint64_t key = (std::uint64_t(g.members.front()) << 32) | (seq & 0xffffffffu);
    if (!gate.submit(key, release)) release();  // running freely
  }
  const RunClock::time_point from = RunClock::now();
  group_->u.wait_until(
      global_rank(), Waiter::main,
      [&g, seq] {
        std::lock_guard lock(g.gate_mu);
        return g.gate_released > seq;
      },
      what);
  RunClock::resume_at(from);  // a free run launches at once: this wait is stepping's alone
}

Request ThreadsComm::iall_reduce(const void* s, void* r, std::size_t n, DType t, ReduceOp op) {
  auto g = group_;
  const int me = rank_;
  return run_collective(CollectiveKind::all_reduce, n * dtype_size(t), [g, me, s, r, n, t, op] {
    g->slots[std::size_t(me)] = {s, r};
    enter(*g, me, "all_reduce");
    reduce_chunk_to_all(*g, chunk_range(n, int(g->members.size()), me), t, op, true, 0);
    leave(*g, me, "all_reduce");
  });
}

Request ThreadsComm::ireduce(const void* s, void* r, std::size_t n, DType t, ReduceOp op, int root) {
  check_peer(root, "reduce root");
  auto g = group_;
  const int me = rank_;
  return run_collective(CollectiveKind::reduce, n * dtype_size(t), [g, me, s, r, n, t, op, root] {
    g->slots[std::size_t(me)] = {s, r};
    enter(*g, me, "reduce");
    // Every member reduces its own chunk straight into the root's output: the work is split P ways.
    reduce_chunk_to_all(*g, chunk_range(n, int(g->members.size()), me), t, op, false, root);
    leave(*g, me, "reduce");
  });
}

Request ThreadsComm::ireduce_scatter(const void* s, void* r, std::size_t n, DType t, ReduceOp op) {
  auto g = group_;
  const int me = rank_;
  return run_collective(CollectiveKind::reduce_scatter, n * dtype_size(t) * std::size_t(size()),
                        [g, me, s, r, n, t, op] {
                          const std::size_t P = g->members.size(), es = dtype_size(t);
                          g->slots[std::size_t(me)] = {s, r};
                          enter(*g, me, "reduce_scatter");
                          std::vector<const void*> inputs(P);
                          for (std::size_t q = 0; q < P; ++q)
                            inputs[q] = at(g->slots[q].send, std::size_t(me) * n * es);
                          device_ops_for(r, inputs[0]).reduce_many(r, inputs.data(), int(P), n, t, op);
                          finish_average(r, n, t, op, int(P));
                          leave(*g, me, "reduce_scatter");
                        });
}

Request ThreadsComm::iall_gather(const void* s, void* r, std::size_t n, DType t) {
  auto g = group_;
  const int me = rank_;
  return run_collective(CollectiveKind::all_gather, n * dtype_size(t) * std::size_t(size()), [g, me, s, r, n, t] {
    const std::size_t P = g->members.size(), bytes = n * dtype_size(t);
    g->slots[std::size_t(me)] = {s, r};
    enter(*g, me, "all_gather");
    for (std::size_t q = 0; q < P; ++q) {  // pull every block into my output
      const char* src = at(g->slots[q].send, 0);
      char* dst = at(r, q * bytes);
      if (src != dst) copy_bytes(dst, src, bytes);  // host or device memory
    }
    leave(*g, me, "all_gather");
  });
}

Request ThreadsComm::ibroadcast(void* b, std::size_t n, DType t, int root) {
  check_peer(root, "broadcast root");
  auto g = group_;
  const int me = rank_;
  return run_collective(CollectiveKind::broadcast, n * dtype_size(t), [g, me, b, n, t, root] {
    g->slots[std::size_t(me)] = {b, b};
    enter(*g, me, "broadcast");
    if (me != root) copy_bytes(b, g->slots[std::size_t(root)].send, n * dtype_size(t));
    leave(*g, me, "broadcast");
  });
}

Request ThreadsComm::iall_to_all(const void* s, void* r, std::size_t n, DType t) {
  if (s == r && size() > 1)
    throw Error("all_to_all cannot run in place (send and recv are the same buffer); give it a separate output");
  auto g = group_;
  const int me = rank_;
  return run_collective(CollectiveKind::all_to_all, n * dtype_size(t) * std::size_t(size()), [g, me, s, r, n, t] {
    const std::size_t P = g->members.size(), bytes = n * dtype_size(t);
    g->slots[std::size_t(me)] = {s, r};
    enter(*g, me, "all_to_all");
    for (std::size_t q = 0; q < P; ++q)  // block `me` of every sender lands in my slot q
      copy_bytes(at(r, q * bytes), at(g->slots[q].send, std::size_t(me) * bytes), bytes);
    leave(*g, me, "all_to_all");
  });
}

// Every rank publishes its layout; each pulls its block from every sender's buffer, and
// says which sender disagrees on the count after the group has left (so none waits).
Request ThreadsComm::iall_to_allv(const void* s, void* r, const AllToAllvLayout& layout, DType t) {
  check_all_to_allv_layout(layout, size());
  if (s == r && size() > 1)
    throw Error("all_to_allv cannot run in place (send and recv are the same buffer); give it a separate output");
  auto g = group_;
  const int me = rank_;
  const std::size_t es = dtype_size(t);
  // On an emulated link the busier direction sets the time: a hot rank receives more than it sends.
  const double on_link = double(std::max(layout.sent_to_others(me), layout.received_from_others(me)) * es);
  auto body = [g, me, s, r, l = layout, es] {
    const std::size_t P = g->members.size();
    g->slots[std::size_t(me)] = {s, r, &l};
    enter(*g, me, "all_to_allv");
    std::string mismatch;
    for (std::size_t q = 0; q < P; ++q) {
      const AllToAllvLayout& from = *g->slots[q].layout;
      const std::size_t n = from.send_counts[std::size_t(me)];
      if (n != l.recv_counts[q] && mismatch.empty())
        mismatch = "rank " + std::to_string(q) + " sends " + std::to_string(n) + " elements to rank " +
                   std::to_string(me) + ", which expects " + std::to_string(l.recv_counts[q]);
      copy_bytes(at(r, l.recv_displs[q] * es), at(g->slots[q].send, from.send_displs[std::size_t(me)] * es),
                 std::min(n, l.recv_counts[q]) * es);
    }
    leave(*g, me, "all_to_allv");
    if (!mismatch.empty()) throw Error("all_to_allv counts disagree: " + mismatch);
  };
  return run_collective(CollectiveKind::all_to_allv, layout.sent() * es, std::move(body), on_link);
}

Request ThreadsComm::ibarrier() {
  auto g = group_;
  const int me = rank_;
  return run_collective(CollectiveKind::barrier, 0, [g, me] { sync_members(*g, me, "barrier"); });
}

}  // namespace dtl::threads
