// Internal to the threads backend: one group of ranks and one rank's Comm on it.
#pragma once

#include <cstdint>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "core/comm/comm.h"
#include "core/comm/threads/universe.h"
#include "core/trace/run_clock.h"

namespace dtl::threads {

// A request completed by whichever thread finishes the operation, waited on by its owner.
class ThreadRequest final : public RequestImpl {
 public:
  ThreadRequest(Universe& u, int owner, std::string what) : u_(u), owner_(owner), what_(std::move(what)) {}
  void wait() override;
  bool test() override;
  void settle() noexcept override;
  // While queued in a mailbox, how to take the message back out (set by the poster).
  std::function<bool()> withdraw;
  std::atomic<bool> copying{false};  // the data is moving right now (move_data)
  bool collective = false;           // run by the comm stream: settle waits for it to finish
  // Called once by the completing thread. `ev` (if tracing) is appended by the owner at wait().
  // `at`: when it was done in run time (core/trace/run_clock.h); by default the completing
  // thread's now.
  void complete(std::exception_ptr error, std::int64_t end_ns, std::optional<RunClock::time_point> at = {});
  // Stepping mode only: record `ev` now, from the thread that moved the data. Safe because
  // while a released transfer runs every other rank is parked (see StepGate).
  void record_now(std::int64_t end_ns);

  Event ev;             // pre-filled at post time when tracing; end_ns set on completion
  bool traced = false;  // record `ev` on the owner's main stream at wait()
  const RunClock::time_point posted_at = RunClock::now();  // made on the posting thread

 private:
  void finish_on_owner();
  Universe& u_;
  int owner_;
  std::string what_;
  // A stepped run: the owner's clock goes on from when it began to wait or when this was
  // done, whichever is later (RunClock::resume_at).
  void resume_owner_clock(RunClock::time_point waited_from) const;
  std::atomic<bool> done_{false};
  RunClock::time_point done_at_{};  // written before done_ (release), read after it (acquire)
  std::exception_ptr error_;
  bool recorded_ = false;
};

struct PostedSend {
  int src;  // group rank
  int tag;
  const void* buf;
  std::size_t bytes;
  std::shared_ptr<ThreadRequest> req;
};

struct PostedRecv {
  int src;
  int tag;
  void* buf;
  std::size_t bytes;
  bool reduce;  // recv_reduce: combine instead of copy
  DType dtype;
  ReduceOp op;
  std::shared_ptr<ThreadRequest> req;
};

// Messages waiting for their other half, per receiving rank.
struct Mailbox {
  std::mutex mu;
  std::deque<PostedSend> sends;  // arrived before a matching recv was posted
  std::deque<PostedRecv> recvs;  // posted before the matching send arrived
};

struct Group {
  Group(Universe& u, std::vector<int> member_ranks);
  Universe& u;
  std::vector<int> members;  // global rank of each group rank
  std::vector<std::unique_ptr<Mailbox>> mailboxes;
  GroupBarrier barrier;
  // Collective rendezvous: member r publishes its buffers in slots[r] before the barrier.
  struct Slot {
    const void* send = nullptr;
    void* recv = nullptr;
    const AllToAllvLayout* layout = nullptr;  // all_to_allv's, while it runs
  };
  std::vector<Slot> slots;
  // Members between a collective's entry and exit barriers: they may be reading other
  // members' buffers, so nobody leaves on an abort until this is 0.
  std::atomic<int> inside{0};
  // Which channel's connections this group's messages take on an emulated link (split_channels;
  // 0 for every other group): channels overlap their latencies and share the bandwidth.
  int link_channel = 0;
  std::mutex split_mu;
  std::map<std::pair<std::uint64_t, int>, std::shared_ptr<Group>> splits;
  // Stepping by collectives: members that reached each collective (by sequence number),
  // and how many of the group's collectives the controller has released, in order.
  std::mutex gate_mu;
  std::map<std::uint64_t, int> gate_arrived;
  std::uint64_t gate_released = 0;
};

class ThreadsComm final : public Comm {
 public:
  ThreadsComm(std::shared_ptr<Group> group, int rank) : group_(std::move(group)), rank_(rank) {}
  ~ThreadsComm() override;

  int rank() const override { return rank_; }
  int size() const override { return int(group_->members.size()); }
  int global_rank() const override { return group_->members[std::size_t(rank_)]; }
  int global_rank_of(int r) const override { return group_->members.at(std::size_t(r)); }
  BackendKind backend() const override { return BackendKind::threads; }
  Trace* trace() override { return group_->u.trace(); }

  Request isend(const void* buf, std::size_t bytes, int dst, int tag, TransferInfo info) override;
  Request irecv(void* buf, std::size_t bytes, int src, int tag, TransferInfo info) override;
  Request irecv_reduce(void* buf, std::size_t count, DType t, ReduceOp op, int src, int tag,
                       TransferInfo info) override;

  Request iall_reduce(const void* s, void* r, std::size_t n, DType t, ReduceOp op) override;
  Request ireduce_scatter(const void* s, void* r, std::size_t n, DType t, ReduceOp op) override;
  Request iall_gather(const void* s, void* r, std::size_t n, DType t) override;
  Request ibroadcast(void* b, std::size_t n, DType t, int root) override;
  Request ireduce(const void* s, void* r, std::size_t n, DType t, ReduceOp op, int root) override;
  Request iall_to_all(const void* s, void* r, std::size_t n, DType t) override;
  Request iall_to_allv(const void* s, void* r, const AllToAllvLayout& layout, DType t) override;
  Request ibarrier() override;

  std::unique_ptr<Comm> split(int color, int key) override;
  std::vector<std::unique_ptr<Comm>> split_channels(int count) override;

 private:
  // split(), the new group's messages on channel `link_channel` of the emulated link.
  std::unique_ptr<Comm> split_on_channel(int color, int key, int link_channel);
  Request post_recv(PostedRecv r, TransferInfo info, const char* verb);
  void check_peer(int peer, const char* what) const;
  // Queues `body` on this rank's comm stream; the request completes when it returns.
  // link_bytes: what the emulated link's α-β model charges (library_collective_time), when
  // it is not `bytes` (all_to_allv: the bytes on the rank's busier direction).
  Request run_collective(CollectiveKind kind, std::size_t bytes, std::function<void()> body, double link_bytes = -1);
  // Stepping by collectives: wait, blocked, until the gate releases collective `seq`.
  void await_release(StepGate& gate, std::uint64_t seq, const std::string& what);

  std::shared_ptr<Group> group_;
  int rank_;
  std::shared_ptr<WorkQueue> queue_;  // started on the first collective
  std::uint64_t split_seq_ = 0;
  std::uint64_t collective_seq_ = 0;
};

}  // namespace dtl::threads
