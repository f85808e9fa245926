// Point-to-point messages, requests and split for the threads backend.
#include "core/comm/threads/threads_comm.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "core/comm/wait_words.h"
#include "core/memory/device_ops.h"

namespace dtl::threads {

// ---- requests ----------------------------------------------------------------------

void ThreadRequest::complete(std::exception_ptr error, std::int64_t end_ns, std::optional<RunClock::time_point> at) {
  error_ = std::move(error);
  ev.end_ns = end_ns;
  done_at_ = at.value_or(RunClock::now());
  done_.store(true, std::memory_order_release);
  u_.note_progress();
  u_.wake(owner_);
}

void ThreadRequest::record_now(std::int64_t end_ns) {
  if (!traced || recorded_) return;
  ev.end_ns = end_ns;
  recorded_ = true;
  u_.trace()->record(ev);
}

void ThreadRequest::finish_on_owner() {
  if (traced && !recorded_) {
    recorded_ = true;
    u_.trace()->record(ev);
  }
  if (error_) std::rethrow_exception(error_);
}

void ThreadRequest::resume_owner_clock(RunClock::time_point waited_from) const {
  if (RunClock::stepped()) RunClock::resume_at(std::max(waited_from, done_at_));
}

void ThreadRequest::wait() {
  const RunClock::time_point from = RunClock::now();
  u_.wait_until(
      owner_, Waiter::main, [this] { return done_.load(std::memory_order_acquire); }, what_);
  resume_owner_clock(from);
  finish_on_owner();
}

void ThreadRequest::settle() noexcept {
  if (done_.load(std::memory_order_acquire)) return;
  if (withdraw && withdraw()) return;  // still queued: taken back, nobody will touch the buffer
  // Matched: the data is moving or will be (a library collective, a link in flight). Wait for
  // it; after an abort only a copy in progress can still touch the buffer.
  // A collective always finishes promptly (on an abort its barriers give up). While
  // stepping, the transfer may sit in the step gate: this rank counts as waiting, so the
  // controller sees a quiet world and moves it (a rank unwinding from an injected fault
  // used to look busy, and the run hung until the watchdog).
  StepGate* gate = u_.gate();
  const RunClock::time_point from = RunClock::now();
  if (gate) gate->block(owner_);
  while (!done_.load(std::memory_order_acquire)) {
    if (!collective && u_.aborted() && !copying.load(std::memory_order_acquire)) break;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  if (gate) gate->unblock(owner_, /*comm_stream=*/false);
  if (done_.load(std::memory_order_acquire)) resume_owner_clock(from);
}

bool ThreadRequest::test() {
  if (!done_.load(std::memory_order_acquire)) {
    if (u_.aborted()) u_.throw_aborted(owner_);
    return false;
  }
  resume_owner_clock(RunClock::now());  // seen done: in run time, not before it was
  finish_on_owner();
  return true;
}

// ---- groups ------------------------------------------------------------------------

Group::Group(Universe& uni, std::vector<int> member_ranks)
    : u(uni), members(std::move(member_ranks)), barrier(int(members.size())), slots(members.size()) {
  for (std::size_t i = 0; i < members.size(); ++i) mailboxes.push_back(std::make_unique<Mailbox>());
}

// ---- the transfer itself -----------------------------------------------------------

namespace {

// Stepping by transfers (not by collectives: then transfers move at once, see StepGate).
bool gates_transfers(const Universe& u) { return u.gate() && u.gate()->unit() == StepUnit::transfers; }

// A stepped run moves a message when the learner releases it, on the controller's thread:
// in run time it moved once both sides had posted, and took as long as the copy took.
RunClock::time_point run_time_done(const PostedSend& s, const PostedRecv& r,
                                   std::chrono::steady_clock::time_point copy_began) {
  return std::max(s.req->posted_at, r.req->posted_at) + (std::chrono::steady_clock::now() - copy_began);
}

std::int64_t trace_ns(const Universe& u, RunClock::time_point at) {
  return u.trace() ? std::int64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(at.time_since_epoch()).count()) -
                         u.trace()->epoch_steady_ns()
                   : 0;
}

// Moves one message and completes both requests.
void move_data(Universe& u, int src_g, int dst_g, int channel, PostedSend& s, PostedRecv& r) {
  std::exception_ptr error;
  auto copy_began = std::chrono::steady_clock::now();
  s.req->copying.store(true);
  r.req->copying.store(true);
  if (u.aborted()) {  // a failed rank may have freed either buffer already
    error = std::make_exception_ptr(Error("the world was aborted before this transfer moved"));
  } else if (s.bytes != r.bytes) {
    error = std::make_exception_ptr(Error("rank " + std::to_string(dst_g) + " posted a receive of " +
                                          std::to_string(r.bytes) + " bytes from rank " + std::to_string(src_g) +
                                          " (tag " + std::to_string(s.tag) + "), but the message has " +
                                          std::to_string(s.bytes) + " bytes; make the counts on both sides agree"));
  } else {
    // Host memory: memcpy and the CPU kernels; GPU memory: device-to-device copies and the
    // CUDA reduction kernel (core/memory/device_ops.h). Both are done when the call returns.
    copy_began = std::chrono::steady_clock::now();
    DeviceOps& ops = device_ops_for(r.buf, s.buf);
    try {
      if (r.reduce) {
        const void* inputs[2] = {r.buf, s.buf};
        ops.reduce_many(r.buf, inputs, 2, r.bytes / dtype_size(r.dtype), r.dtype, r.op);
      } else if (r.bytes > 0) {
        ops.copy(r.buf, s.buf, r.bytes);
      }
    } catch (...) {
      error = std::current_exception();  // a CUDA error fails both requests, not this thread
    }
  }
  s.req->copying.store(false);
  r.req->copying.store(false);
  r.req->ev.flow_id = s.req->ev.flow_id;
  if (u.link().active() && !error) {
    // The data has moved; both sides learn it when the emulated link would have delivered it.
    const auto done = u.schedule_transfer(src_g, dst_g, s.bytes, channel);
    u.link_timer().at(done, [&u, sreq = s.req, rreq = r.req] {
      const std::int64_t t = u.trace() ? u.trace()->now_ns() : 0;
      sreq->complete(nullptr, t);
      rreq->complete(nullptr, t);
    });
    return;
  }
  if (gates_transfers(u)) {
    const RunClock::time_point done = run_time_done(s, r, copy_began);
    const std::int64_t t = trace_ns(u, done);
    // The picture drawn at the next quiet point must include this transfer, so record the
    // receive now (every rank is parked) rather than at its wait().
    if (!error) r.req->record_now(t);
    s.req->complete(error, t, done);
    r.req->complete(error, t, done);
    return;
  }
  const std::int64_t t = u.trace() ? u.trace()->now_ns() : 0;
  s.req->complete(error, t);
  r.req->complete(error, t);
}

// Runs on whichever thread matched the pair (the side that came second). In stepping
// mode the gate moves it later instead, so the posting call returns at once.
void deliver(Group& g, PostedSend s, PostedRecv r, int receiver) {
  Universe& u = g.u;
  const int src_g = g.members[std::size_t(s.src)], dst_g = g.members[std::size_t(receiver)];
  const int channel = g.link_channel;
  if (StepGate* gate = u.gate(); gate && gates_transfers(u)) {
    const std::uint64_t key = (std::uint64_t(src_g) << 32) | std::uint32_t(dst_g);
    if (gate->submit(key, [&u, src_g, dst_g, channel, s, r]() mutable { move_data(u, src_g, dst_g, channel, s, r); }))
      return;
  }
  move_data(u, src_g, dst_g, channel, s, r);
}

std::string bytes_text(std::size_t b) { return std::to_string(b) + " B"; }

// Take a still-unmatched message out of a mailbox queue (sends or recvs); false if it
// was matched already.
template <typename Posted>
bool withdraw(Mailbox& box, std::deque<Posted> Mailbox::*queue, const ThreadRequest* req) {
  std::lock_guard lock(box.mu);
  auto& q = box.*queue;
  auto it = std::find_if(q.begin(), q.end(), [&](const Posted& p) { return p.req.get() == req; });
  if (it == q.end()) return false;
  q.erase(it);
  return true;
}

}  // namespace

void ThreadsComm::check_peer(int peer, const char* what) const {
  if (peer < 0 || peer >= size())
    throw Error("rank " + std::to_string(global_rank()) + ": " + what + " names rank " + std::to_string(peer) +
                ", but this group has ranks 0.." + std::to_string(size() - 1));
}

Request ThreadsComm::isend(const void* buf, std::size_t bytes, int dst, int tag, TransferInfo info) {
  check_peer(dst, "send");
  wait_for_device_work_of_this_thread();  // the receiver's thread may copy buf at once
  Universe& u = group_->u;
  const int me = global_rank(), dst_g = global_rank_of(dst);
  RankState& rs = u.rank_state(me);
  const int n = rs.sends_posted.fetch_add(1);
  const FaultPlan::Action act = u.faults().at(StepUnit::transfers, me, n);
  if (act == FaultPlan::Action::fail)
    throw Error("injected fault on rank " + std::to_string(me) + " at its send #" + std::to_string(n) +
                " (--inject-fault)");
  if (act == FaultPlan::Action::hang)
    u.wait_until(
        me, Waiter::main, [] { return false; },
        "nothing: it stopped sending on purpose before send #" + std::to_string(n) + " to rank " +
            std::to_string(dst_g) + " (--inject-hang)");

  // The lab's words, when it gave them, say what the tag means: the tag then goes unsaid.
  auto req = std::make_shared<ThreadRequest>(
      u, me,
      info.what.empty()
          ? "send to rank " + std::to_string(dst_g) + " tag " + std::to_string(tag) + " (" + bytes_text(bytes) + ")"
          : with_wait_words(info.what, "send to rank " + std::to_string(dst_g) + ", " + bytes_text(bytes)));
  if (Trace* tr = u.trace()) {
    req->traced = true;
    req->ev = Event{.begin_ns = tr->now_ns(),
                    .bytes = bytes,
                    .flow_id = tr->next_flow_id(),
                    .rank = me,
                    .peer = dst_g,
                    .tag = tag,
                    .step = info.step,
                    .chunk = info.chunk,
                    .chunk_count = std::int16_t(info.chunk_count),
                    .kind = EventKind::send};
    stamp_group(req->ev);
  }
  PostedSend s{rank_, tag, buf, bytes, req};
  Mailbox& box = *group_->mailboxes[std::size_t(dst)];
  std::unique_lock lock(box.mu);
  auto it = std::find_if(box.recvs.begin(), box.recvs.end(),
                         [&](const PostedRecv& r) { return r.src == rank_ && r.tag == tag; });
  if (it == box.recvs.end()) {
    req->withdraw = [group = group_, dst, p = req.get()] {
      return withdraw(*group->mailboxes[std::size_t(dst)], &Mailbox::sends, p);
    };
    box.sends.push_back(std::move(s));
    return Request(req);
  }
  PostedRecv r = std::move(*it);
  box.recvs.erase(it);
  lock.unlock();
  deliver(*group_, std::move(s), std::move(r), dst);
  return Request(req);
}

Request ThreadsComm::post_recv(PostedRecv r, TransferInfo info, const char* verb) {
  check_peer(r.src, verb);
  wait_for_device_work_of_this_thread();  // the sender's thread may write (or reduce into) the buffer at once
  Universe& u = group_->u;
  const int me = global_rank(), src_g = global_rank_of(r.src);
  const std::string from = std::string(verb) + " from rank " + std::to_string(src_g);
  r.req = std::make_shared<ThreadRequest>(
      u, me,
      info.what.empty() ? from + " tag " + std::to_string(r.tag) + " (" + bytes_text(r.bytes) + ")"
                        : with_wait_words(info.what, from + ", " + bytes_text(r.bytes)));
  if (Trace* tr = u.trace()) {
    r.req->traced = true;
    r.req->ev = Event{.begin_ns = tr->now_ns(),
                      .bytes = r.bytes,
                      .rank = me,
                      .peer = src_g,
                      .tag = r.tag,
                      .step = info.step,
                      .chunk = info.chunk,
                      .chunk_count = std::int16_t(info.chunk_count),
                      .kind = EventKind::recv,
                      .flags = std::uint8_t(r.reduce ? kFlagReduce : 0)};
    stamp_group(r.req->ev);
  }
  Request handle(r.req);
  Mailbox& box = *group_->mailboxes[std::size_t(rank_)];
  std::unique_lock lock(box.mu);
  auto it = std::find_if(box.sends.begin(), box.sends.end(),
                         [&](const PostedSend& s) { return s.src == r.src && s.tag == r.tag; });
  if (it == box.sends.end()) {
    r.req->withdraw = [group = group_, me = rank_, p = r.req.get()] {
      return withdraw(*group->mailboxes[std::size_t(me)], &Mailbox::recvs, p);
    };
    box.recvs.push_back(std::move(r));
    return handle;
  }
  PostedSend s = std::move(*it);
  box.sends.erase(it);
  lock.unlock();
  deliver(*group_, std::move(s), std::move(r), rank_);
  return handle;
}

Request ThreadsComm::irecv(void* buf, std::size_t bytes, int src, int tag, TransferInfo info) {
  return post_recv(PostedRecv{src, tag, buf, bytes, false, DType::f32, ReduceOp::sum, nullptr}, info, "recv");
}

Request ThreadsComm::irecv_reduce(void* buf, std::size_t count, DType t, ReduceOp op, int src, int tag,
                                  TransferInfo info) {
  return post_recv(PostedRecv{src, tag, buf, count * dtype_size(t), true, t, op, nullptr}, info, "recv_reduce");
}

// ---- split -------------------------------------------------------------------------

std::unique_ptr<Comm> ThreadsComm::split(int color, int key) { return split_on_channel(color, key, 0); }

std::vector<std::unique_ptr<Comm>> ThreadsComm::split_channels(int count) {
  std::vector<std::unique_ptr<Comm>> channels;
  for (int c = 0; c < count; ++c) channels.push_back(split_on_channel(0, rank_, c));
  return channels;
}

std::unique_ptr<Comm> ThreadsComm::split_on_channel(int color, int key, int link_channel) {
  // Everyone learns everyone's (color, key), then the members of each color agree on
  // one Group object through the parent's registry (first one to arrive creates it).
  const std::int64_t mine[2] = {color, key};
  std::vector<std::int64_t> all(std::size_t(size()) * 2);
  all_gather(mine, all.data(), 2, DType::i64);
  const std::uint64_t seq = split_seq_++;
  if (color < 0) return nullptr;

  std::vector<int> ranks;  // group ranks of this color, ordered by (key, rank)
  for (int q = 0; q < size(); ++q)
    if (all[std::size_t(q) * 2] == color) ranks.push_back(q);
  std::stable_sort(ranks.begin(), ranks.end(),
                   [&](int a, int b) { return all[std::size_t(a) * 2 + 1] < all[std::size_t(b) * 2 + 1]; });
  std::vector<int> globals;
  int new_rank = -1;
  for (int q : ranks) {
    if (q == rank_) new_rank = int(globals.size());
    globals.push_back(global_rank_of(q));
  }
  std::shared_ptr<Group> g;
  {
    std::lock_guard lock(group_->split_mu);
    auto& slot = group_->splits[{seq, color}];
    if (!slot) {
      slot = std::make_shared<Group>(group_->u, globals);
      slot->link_channel = link_channel;  // set once, by its creator, before anyone uses it
    }
    g = slot;
  }
  auto sub = std::make_unique<ThreadsComm>(g, new_rank);
  sub->mark_subgroup();
  return sub;
}

}  // namespace dtl::threads
