// dtl::Comm — the one seam every lab is written against.
//
// A Comm is one rank's view of a group of ranks. The same lab code runs on every
// backend (threads in one process, Open MPI processes, NCCL with one GPU per rank):
//
//   point-to-point     send / recv / isend / irecv, plus recv_reduce (receive and
//                      combine into a buffer in one pass, NCCL's recvReduce primitive)
//   library collectives all_reduce, reduce_scatter, all_gather, broadcast, reduce,
//                      all_to_all, all_to_allv (variable counts), barrier — each also as an
//                      async i-version
//   groups             split(color, key), as MPI_Comm_split
//
// Messages match on (source, tag) in the order they were sent, as in MPI. Buffers of
// a pending request must stay untouched until its wait() returns. Collectives follow
// NCCL's conventions: reduce_scatter's input holds size()*recv_count elements, rank r
// keeps block r; all_gather's output holds size()*send_count, block r from rank r.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/comm/all_to_allv.h"
#include "core/comm/dtype.h"
#include "core/trace/event.h"
#include "core/trace/vocab.h"

namespace dtl {

class Trace;

// Annotations a lab attaches to a transfer so traces and the visualizer can show which
// algorithm step and which chunk (in the lab's chunk grid) moved.
struct TransferInfo {
  int step = -1;
  int chunk = -1;
  int chunk_count = 1;
  // What the receiver waits for, in the lab's words ("for the activation of micro-batch 5
  // from stage 1"): what the watchdog prints when it never comes. Empty: rank and tag.
  std::string what;
};

// A pending operation. wait() blocks until it completes and rethrows its error.
class RequestImpl {
 public:
  virtual ~RequestImpl() = default;
  virtual void wait() = 0;
  virtual bool test() = 0;  // true once complete (also rethrows an error)
  // The last handle is gone (often while an exception unwinds the caller's buffers):
  // make sure the operation no longer touches them. Never throws.
  virtual void settle() noexcept {}
};

// A handle to a pending operation. Dropping the last handle without wait() settles the
// operation, so a rank that fails mid-communication never leaves a transfer writing into
// memory it has already freed.
class Request {
 public:
  Request() = default;
  explicit Request(std::shared_ptr<RequestImpl> impl) : h_(std::make_shared<Handle>(std::move(impl))) {}
  void wait() {
    if (h_) h_->impl->wait();
  }
  bool test() { return h_ ? h_->impl->test() : true; }
  bool valid() const { return h_ != nullptr; }

 private:
  struct Handle {
    explicit Handle(std::shared_ptr<RequestImpl> i) : impl(std::move(i)) {}
    ~Handle() {
      if (impl) impl->settle();
    }
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;
    std::shared_ptr<RequestImpl> impl;
  };
  std::shared_ptr<Handle> h_;
};

// The backend a Comm runs on (--backend threads|mpi|nccl). Code that depends on it (thread
// ranks share one process's memory) asks the kind; the name is for people and reports.
enum class BackendKind : std::uint8_t { threads, mpi, nccl };
inline const char* backend_kind_name(BackendKind b) {
  switch (b) {
    case BackendKind::threads: return "threads";
    case BackendKind::mpi: return "mpi";
    case BackendKind::nccl: return "nccl";
  }
  return "?";
}
// The reverse, for --backend (nullopt: no backend of that name).
inline std::optional<BackendKind> parse_backend_kind(std::string_view s) {
  for (const BackendKind b : {BackendKind::threads, BackendKind::mpi, BackendKind::nccl})
    if (s == backend_kind_name(b)) return b;
  return std::nullopt;
}

class Comm {
 public:
  virtual ~Comm() = default;

  virtual int rank() const = 0;         // rank within this group
  virtual int size() const = 0;         // ranks in this group
  virtual int global_rank() const = 0;  // rank in the whole world (what traces show)
  virtual int global_rank_of(int group_rank) const = 0;
  virtual BackendKind backend() const = 0;
  std::string backend_name() const { return backend_kind_name(backend()); }
  virtual Trace* trace() = 0;  // null when tracing is off

  // ---- point-to-point ----
  virtual Request isend(const void* buf, std::size_t bytes, int dst, int tag, TransferInfo info = {}) = 0;
  virtual Request irecv(void* buf, std::size_t bytes, int src, int tag, TransferInfo info = {}) = 0;
  // buf[i] = buf[i] (op) message[i]: receive and reduce without a staging copy.
  virtual Request irecv_reduce(void* buf, std::size_t count, DType t, ReduceOp op, int src, int tag,
                               TransferInfo info = {}) = 0;

  void send(const void* buf, std::size_t bytes, int dst, int tag, TransferInfo info = {}) {
    isend(buf, bytes, dst, tag, std::move(info)).wait();
  }
  void recv(void* buf, std::size_t bytes, int src, int tag, TransferInfo info = {}) {
    irecv(buf, bytes, src, tag, std::move(info)).wait();
  }
  void recv_reduce(void* buf, std::size_t count, DType t, ReduceOp op, int src, int tag, TransferInfo info = {}) {
    irecv_reduce(buf, count, t, op, src, tag, std::move(info)).wait();
  }

  // ---- library collectives (send == recv means in place) ----
  virtual Request iall_reduce(const void* send, void* recv, std::size_t count, DType t, ReduceOp op) = 0;
  virtual Request ireduce_scatter(const void* send, void* recv, std::size_t recv_count, DType t, ReduceOp op) = 0;
  virtual Request iall_gather(const void* send, void* recv, std::size_t send_count, DType t) = 0;
  virtual Request ibroadcast(void* buf, std::size_t count, DType t, int root) = 0;
  virtual Request ireduce(const void* send, void* recv, std::size_t count, DType t, ReduceOp op, int root) = 0;
  virtual Request iall_to_all(const void* send, void* recv, std::size_t count_per_rank, DType t) = 0;
  // Each rank's blocks of its own size (AllToAllvLayout); not in place. The layout is copied.
  virtual Request iall_to_allv(const void* send, void* recv, const AllToAllvLayout& layout, DType t) = 0;
  virtual Request ibarrier() = 0;

  void all_reduce(const void* s, void* r, std::size_t n, DType t, ReduceOp op) { iall_reduce(s, r, n, t, op).wait(); }
  void reduce_scatter(const void* s, void* r, std::size_t n, DType t, ReduceOp op) {
    ireduce_scatter(s, r, n, t, op).wait();
  }
  void all_gather(const void* s, void* r, std::size_t n, DType t) { iall_gather(s, r, n, t).wait(); }
  void broadcast(void* b, std::size_t n, DType t, int root) { ibroadcast(b, n, t, root).wait(); }
  void reduce(const void* s, void* r, std::size_t n, DType t, ReduceOp op, int root) {
    ireduce(s, r, n, t, op, root).wait();
  }
  void all_to_all(const void* s, void* r, std::size_t n, DType t) { iall_to_all(s, r, n, t).wait(); }
  void all_to_allv(const void* s, void* r, const AllToAllvLayout& l, DType t) { iall_to_allv(s, r, l, t).wait(); }
  void barrier() { ibarrier().wait(); }

  // Ranks passing the same color form a group, ordered by (key, rank). A negative
  // color joins no group and gets nullptr. Collective over this Comm.
  virtual std::unique_ptr<Comm> split(int color, int key) = 0;
  // NCCL's channels: `count` communicators over this group's ranks (same ranks, same order),
  // each its own set of connections, so that an algorithm can run on all of them at once.
  // On an emulated link the channels of one rank overlap their latencies and share its
  // bandwidth (core/comm/threads/universe.h); elsewhere they are plain splits. Collective.
  virtual std::vector<std::unique_ptr<Comm>> split_channels(int count) {
    std::vector<std::unique_ptr<Comm>> channels;
    channels.reserve(std::size_t(std::max(count, 0)));
    for (int c = 0; c < count; ++c) channels.push_back(split(0, rank()));
    return channels;
  }

  // The parallelism axis this group stands for (Topology names its dp, tp and pp groups).
  // Events a sub-communicator records carry its axis and the rank within it.
  void set_group_axis(GroupAxis axis) { axis_ = axis; }
  GroupAxis group_axis() const { return axis_; }
  bool is_subgroup() const { return subgroup_; }

 protected:
  // Backends call this on every event they record: a sub-communicator's events say
  // which group they belong to; the world's keep axis none and group_rank -1.
  void stamp_group(Event& e) const {
    if (!subgroup_) return;
    e.axis = axis_;
    e.group_rank = std::int16_t(rank());
  }
  void mark_subgroup() { subgroup_ = true; }  // on what split() returns

 private:
  GroupAxis axis_ = GroupAxis::none;
  bool subgroup_ = false;
};

}  // namespace dtl
