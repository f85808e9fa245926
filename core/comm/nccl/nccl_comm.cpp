// dtl::Comm on NCCL (see core/comm/nccl_backend.h). Every CUDA and NCCL call is checked.
#include "core/comm/nccl/nccl_comm.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <numeric>
#include <string>
#include <thread>

#include "core/comm/nccl/nccl_request.h"
#include "core/cuda/check.h"
#include "core/cuda/nccl_check.h"
#include "core/error.h"
#include "core/memory/device_ops.h"
#include "core/trace/trace.h"

namespace dtl::nccl {

namespace {

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::f32: return ncclFloat32;
    case DType::f64: return ncclFloat64;
    case DType::i32: return ncclInt32;
    case DType::i64: return ncclInt64;
    case DType::f16: return ncclFloat16;
    case DType::bf16: return ncclBfloat16;
  }
  throw Error("unknown dtype");
}

// avg is a sum here, divided once afterwards (finish_average), as on every other backend.
ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg: return ncclSum;
    case ReduceOp::max: return ncclMax;
    case ReduceOp::min: return ncclMin;
  }
  throw Error("unknown reduce op");
}

bool on_gpu(const void* p) { return p && &device_ops_for(p) != &host_ops(); }

class NcclComm final : public Comm {
 public:
  NcclComm(std::shared_ptr<Handle> h, RankState& st, std::vector<int> globals)
      : h_(std::move(h)), st_(st), globals_(std::move(globals)) {
    DTL_NCCL_CHECK(ncclCommUserRank(h_->comm, &rank_));
    DTL_NCCL_CHECK(ncclCommCount(h_->comm, &size_));
    if (globals_.empty()) {  // the world: NCCL ranks are global ranks
      globals_.resize(std::size_t(size_));
      std::iota(globals_.begin(), globals_.end(), 0);
    }
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int global_rank() const override { return st_.world_rank; }
  int global_rank_of(int r) const override { return globals_.at(std::size_t(r)); }
  BackendKind backend() const override { return BackendKind::nccl; }
  Trace* trace() override { return st_.trace; }
  Handle& handle() { return *h_; }

  Request isend(const void* buf, std::size_t bytes, int dst, int tag, TransferInfo info) override {
    check_peer(dst, "send");
    inject_faults(StepUnit::transfers, "send");
    // A host buffer is copied to the GPU first (stream-ordered before the send).
    std::shared_ptr<Scratch> staged;
    const void* src = buf;
    if (!on_gpu(buf) && bytes) {
      staged = std::make_shared<Scratch>(bytes, st_.stream);
      DTL_CUDA_CHECK(cudaMemcpyAsync(staged->p, buf, bytes, cudaMemcpyDefault, st_.stream));
      src = staged->p;
    }
    auto r = p2p(EventKind::send, const_cast<void*>(src), bytes, dst, tag, info);
    r->on_complete = [staged] {};  // keeps the staging alive until the send is done
    return Request(r);
  }

  Request irecv(void* buf, std::size_t bytes, int src, int tag, TransferInfo info) override {
    check_peer(src, "recv");
    if (on_gpu(buf) || bytes == 0) return Request(p2p(EventKind::recv, buf, bytes, src, tag, info));
    auto staged = std::make_shared<Scratch>(bytes, st_.stream);  // host buffer: receive on the GPU, copy down
    auto r = p2p(EventKind::recv, staged->p, bytes, src, tag, info);
    r->on_complete = [staged, buf, bytes] { DTL_CUDA_CHECK(cudaMemcpy(buf, staged->p, bytes, cudaMemcpyDefault)); };
    return Request(r);
  }

  Request irecv_reduce(void* buf, std::size_t count, DType t, ReduceOp op, int src, int tag,
                       TransferInfo info) override {
    check_peer(src, "recv");
    // NCCL has no receive-and-reduce for users: receive into staging, then the reduction
    // kernel (DeviceOps), or the CPU's for a host buffer.
    const std::size_t bytes = count * dtype_size(t);
    auto staged = std::make_shared<Scratch>(bytes, st_.stream);
    auto r = p2p(EventKind::recv, staged->p, bytes, src, tag, info);
    r->ev.flags |= kFlagReduce;
    r->on_complete = [staged, buf, count, t, op, bytes] {
      if (on_gpu(buf)) {
        const void* inputs[2] = {buf, staged->p};
        device_ops_for(buf).reduce_many(buf, inputs, 2, count, t, op);
      } else if (bytes) {
        std::vector<char> host(bytes);
        DTL_CUDA_CHECK(cudaMemcpy(host.data(), staged->p, bytes, cudaMemcpyDefault));
        reduce_into(buf, host.data(), count, t, op);
      }
    };
    return Request(r);
  }

  Request iall_reduce(const void* s, void* r, std::size_t n, DType t, ReduceOp op) override {
    const std::size_t b = n * dtype_size(t);
    return collective(CollectiveKind::all_reduce, b, s, b, r, b, true, average(n, t, op),
                      [&](const void* ds, void* dr) {
                        DTL_NCCL_CHECK(ncclAllReduce(ds, dr, n, nccl_type(t), nccl_op(op), h_->comm, st_.stream));
                      });
  }
  Request ireduce_scatter(const void* s, void* r, std::size_t n, DType t, ReduceOp op) override {
    const std::size_t b = n * dtype_size(t);
    return collective(CollectiveKind::reduce_scatter, b * std::size_t(size_), s, b * std::size_t(size_), r, b, true,
                      average(n, t, op), [&](const void* ds, void* dr) {
                        DTL_NCCL_CHECK(ncclReduceScatter(ds, dr, n, nccl_type(t), nccl_op(op), h_->comm, st_.stream));
                      });
  }
  Request iall_gather(const void* s, void* r, std::size_t n, DType t) override {
    const std::size_t b = n * dtype_size(t);
    return collective(CollectiveKind::all_gather, b * std::size_t(size_), s, b, r, b * std::size_t(size_), true, {},
                      [&](const void* ds, void* dr) {
                        DTL_NCCL_CHECK(ncclAllGather(ds, dr, n, nccl_type(t), h_->comm, st_.stream));
                      });
  }
  Request ibroadcast(void* buf, std::size_t n, DType t, int root) override {
    check_peer(root, "broadcast root");
    const std::size_t b = n * dtype_size(t);
    return collective(CollectiveKind::broadcast, b, buf, b, buf, b, true, {}, [&](const void* ds, void* dr) {
      DTL_NCCL_CHECK(ncclBroadcast(ds, dr, n, nccl_type(t), root, h_->comm, st_.stream));
    });
  }
  Request ireduce(const void* s, void* r, std::size_t n, DType t, ReduceOp op, int root) override {
    check_peer(root, "reduce root");
    const std::size_t b = n * dtype_size(t);
    const bool root_here = rank_ == root;
    return collective(CollectiveKind::reduce, b, s, b, r, b, root_here, root_here ? average(n, t, op) : AfterFn{},
                      [&](const void* ds, void* dr) {
                        DTL_NCCL_CHECK(ncclReduce(ds, dr, n, nccl_type(t), nccl_op(op), root, h_->comm, st_.stream));
                      });
  }
  Request iall_to_all(const void* s, void* r, std::size_t n, DType t) override {
    if (s == r && size_ > 1)
      throw Error("all_to_all cannot run in place (send and recv are the same buffer); give it a separate output");
    const std::size_t b = n * dtype_size(t), total = b * std::size_t(size_);
    return collective(CollectiveKind::all_to_all, total, s, total, r, total, true, {}, [&](const void* ds, void* dr) {
      DTL_NCCL_CHECK(ncclGroupStart());  // every pair exchanges its block: one group of sends and receives
      for (int q = 0; q < size_; ++q) {
        DTL_NCCL_CHECK(
            ncclSend(static_cast<const char*>(ds) + std::size_t(q) * b, b, ncclUint8, q, h_->comm, st_.stream));
        DTL_NCCL_CHECK(ncclRecv(static_cast<char*>(dr) + std::size_t(q) * b, b, ncclUint8, q, h_->comm, st_.stream));
      }
      DTL_NCCL_CHECK(ncclGroupEnd());
    });
  }
  // One group of sends and receives, a count per peer (NCCL has no alltoallv call: its own
  // examples build it this way); the layout is read now, while the calls are enqueued.
  Request iall_to_allv(const void* s, void* r, const AllToAllvLayout& l, DType t) override {
    check_all_to_allv_layout(l, size_);
    if (s == r && size_ > 1)
      throw Error("all_to_allv cannot run in place (send and recv are the same buffer); give it a separate output");
    const std::size_t es = dtype_size(t), s_bytes = l.send_extent() * es, r_bytes = l.recv_extent() * es;
    return collective(CollectiveKind::all_to_allv, l.sent() * es, s, s_bytes, r, r_bytes, true, {},
                      [&](const void* ds, void* dr) {
                        DTL_NCCL_CHECK(ncclGroupStart());
                        for (int q = 0; q < size_; ++q) {
                          const std::size_t p = std::size_t(q);
                          DTL_NCCL_CHECK(ncclSend(static_cast<const char*>(ds) + l.send_displs[p] * es,
                                                  l.send_counts[p] * es, ncclUint8, q, h_->comm, st_.stream));
                          DTL_NCCL_CHECK(ncclRecv(static_cast<char*>(dr) + l.recv_displs[p] * es, l.recv_counts[p] * es,
                                                  ncclUint8, q, h_->comm, st_.stream));
                        }
                        DTL_NCCL_CHECK(ncclGroupEnd());
                      });
  }
  Request ibarrier() override {
    auto token = std::make_shared<Scratch>(sizeof(float), st_.stream);  // an all-reduce of one value
    DTL_CUDA_CHECK(cudaMemsetAsync(token->p, 0, sizeof(float), st_.stream));
    return collective(
        CollectiveKind::barrier, 0, token->p, sizeof(float), token->p, sizeof(float), false, [token](void*) {},
        [&](const void* ds, void* dr) {
          DTL_NCCL_CHECK(ncclAllReduce(ds, dr, 1, ncclFloat32, ncclSum, h_->comm, st_.stream));
        });
  }

  std::unique_ptr<Comm> split(int color, int key) override {
    // Every rank learns every (color, key) so it knows its new group's global ranks, which
    // NCCL orders as MPI_Comm_split does: by key, then by rank.
    std::vector<int> mine = {color, key}, all(std::size_t(2 * size_));
    all_gather(mine.data(), all.data(), 2, DType::i32);
    ncclComm_t sub = nullptr;
    DTL_NCCL_CHECK(ncclCommSplit(h_->comm, color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, &sub, nullptr));
    if (color < 0) return nullptr;
    std::vector<int> members;
    for (int q = 0; q < size_; ++q)
      if (all[std::size_t(2 * q)] == color) members.push_back(q);
    std::stable_sort(members.begin(), members.end(),
                     [&](int a, int b) { return all[std::size_t(2 * a + 1)] < all[std::size_t(2 * b + 1)]; });
    std::vector<int> globals;
    for (int q : members) globals.push_back(global_rank_of(q));
    auto h = std::make_shared<Handle>();
    h->comm = sub;
    auto c = std::make_unique<NcclComm>(std::move(h), st_, std::move(globals));
    c->mark_subgroup();
    return c;
  }

 private:
  using AfterFn = std::function<void(void* recv)>;

  void check_peer(int peer, const char* what) const {
    if (peer < 0 || peer >= size_)
      throw Error("rank " + std::to_string(st_.world_rank) + ": " + what + " names rank " + std::to_string(peer) +
                  ", but this group has ranks 0.." + std::to_string(size_ - 1));
  }

  // --inject-fault / --inject-hang at this rank's n-th operation of `kind`.
  void inject_faults(StepUnit kind, const char* what) {
    const int n = kind == StepUnit::transfers ? st_.sends_posted++ : st_.collectives_posted++;
    const FaultPlan::Action act = st_.faults.at(kind, st_.world_rank, n);
    if (act == FaultPlan::Action::fail)
      throw Error("injected fault on rank " + std::to_string(st_.world_rank) + " at its " +
                  FaultPlan::operation(what, n) + " (--inject-fault)");
    if (act != FaultPlan::Action::hang) return;
    while (!(st_.world_failed && st_.world_failed->load() >= 0))  // silent until a peer's deadline fails it
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    throw Aborted(st_.world_failed->load(), "rank " + std::to_string(st_.world_rank) +
                                                " stopped communicating on purpose "
                                                "(--inject-hang) and the run was aborted");
  }

  AfterFn average(std::size_t n, DType t, ReduceOp op) {
    if (op != ReduceOp::avg) return {};
    return [n, t, op, p = size_](void* recv) { finish_average(recv, n, t, op, p); };
  }

  // A point-to-point operation joins the pending group; it reaches NCCL at the first wait.
  std::shared_ptr<NcclRequest> p2p(EventKind kind, void* buf, std::size_t bytes, int peer, int tag, TransferInfo info) {
    wait_for_device_work_of_this_thread();  // NCCL's stream is not the compute stream: order them here
    if (!pending_ || pending_->launched) pending_ = std::make_shared<PendingGroup>();
    pending_->ops.push_back({kind == EventKind::send, buf, bytes, peer});
    const int peer_g = global_rank_of(peer);
    auto r = std::make_shared<NcclRequest>(st_, h_, pending_->span,
                                           std::string(kind == EventKind::send ? "send to" : "recv from") + " rank " +
                                               std::to_string(peer_g) + " tag " + std::to_string(tag));
    r->launch = [g = pending_, h = h_, &st = st_] { g->launch(st, h->comm); };
    if (st_.trace) {
      const int from = kind == EventKind::send ? st_.world_rank : peer_g,
                to = kind == EventKind::send ? peer_g : st_.world_rank;
      const std::uint64_t k = st_.messages[{from, to}]++;
      r->traced = true;
      r->ev = Event{.bytes = bytes,
                    .flow_id = (std::uint64_t(from) << 44) ^ (std::uint64_t(to) << 24) ^ (k + 1),
                    .rank = st_.world_rank,
                    .peer = peer_g,
                    .tag = tag,
                    .step = info.step,
                    .chunk = info.chunk,
                    .chunk_count = std::int16_t(info.chunk_count),
                    .kind = kind};
      stamp_group(r->ev);
    }
    return r;
  }

  // A library collective, launched now (after any pending point-to-point, to keep program
  // order). Host buffers are staged through one device buffer laid out like the caller's
  // (in-place forms keep their offsets) and copied back when it completes.
  Request collective(CollectiveKind kind, std::size_t trace_bytes, const void* s, std::size_t s_bytes, void* r,
                     std::size_t r_bytes, bool r_wanted, AfterFn after,
                     const std::function<void(const void*, void*)>& call) {
    const char* name = collective_kind_name(kind);
    inject_faults(StepUnit::collectives, name);
    wait_for_device_work_of_this_thread();  // the kernels that wrote s (or use r) are done first
    if (pending_ && !pending_->launched) pending_->launch(st_, h_->comm);
    auto span = std::make_shared<GpuSpan>();
    auto q =
        std::make_shared<NcclRequest>(st_, h_, span, std::string(name) + " (" + std::to_string(trace_bytes) + " B)");
    const void* ds = s;
    void* dr = r;
    std::shared_ptr<Scratch> staged;
    if (!on_gpu(s) || !on_gpu(r)) {
      const char* cs = static_cast<const char*>(s);
      char* cr = static_cast<char*>(r);
      const bool r_in_s = cr >= cs && cr + r_bytes <= cs + s_bytes, s_in_r = cs >= cr && cs + s_bytes <= cr + r_bytes;
      const std::size_t bytes = r_in_s ? s_bytes : s_in_r ? r_bytes : s_bytes + r_bytes;
      staged = std::make_shared<Scratch>(bytes, st_.stream);
      char* base = static_cast<char*>(staged->p);
      if (s_in_r) {
        DTL_CUDA_CHECK(cudaMemcpyAsync(base, r, r_bytes, cudaMemcpyDefault, st_.stream));
        ds = base + (cs - cr);
        dr = base;
      } else {
        DTL_CUDA_CHECK(cudaMemcpyAsync(base, s, s_bytes, cudaMemcpyDefault, st_.stream));
        ds = base;
        dr = r_in_s ? base + (cr - cs) : base + s_bytes;
      }
    }
    DTL_CUDA_CHECK(cudaEventRecord(span->begin, st_.stream));
    call(ds, dr);
    DTL_CUDA_CHECK(cudaEventRecord(span->end, st_.stream));
    q->on_complete = [staged, dr, r, r_bytes, r_wanted, after] {
      if (staged && r_wanted && r_bytes) DTL_CUDA_CHECK(cudaMemcpy(r, dr, r_bytes, cudaMemcpyDefault));
      if (after && r_wanted) after(r);
    };
    if (st_.trace) {
      q->traced = true;
      q->ev = Event{.bytes = trace_bytes,
                    .rank = st_.world_rank,
                    .label = st_.trace->label(name, library_collective_role(kind)),
                    .kind = EventKind::collective,
                    .stream = kStreamComm};
      stamp_group(q->ev);
    }
    return Request(q);
  }

  std::shared_ptr<Handle> h_;
  RankState& st_;
  std::vector<int> globals_;
  int rank_ = 0, size_ = 1;
  std::shared_ptr<PendingGroup> pending_;
};

}  // namespace

void RankState::start(int gpu, Trace* tr) {
  device = gpu;
  trace = tr;
  DTL_CUDA_CHECK(cudaSetDevice(gpu));
  DTL_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  DTL_CUDA_CHECK(cudaEventCreate(&anchor));
  DTL_CUDA_CHECK(cudaEventRecord(anchor, stream));
  DTL_CUDA_CHECK(cudaEventSynchronize(anchor));
  anchor_ns = tr ? tr->now_ns() : 0;  // the anchor completed a moment ago: the alignment error is that moment
}

void RankState::stop() noexcept {
  if (anchor) (void)cudaEventDestroy(anchor);
  if (stream) (void)cudaStreamDestroy(stream);
  anchor = nullptr;
  stream = nullptr;
}

std::int64_t RankState::host_ns(cudaEvent_t e) const {
  float ms = 0;
  DTL_CUDA_CHECK(cudaEventElapsedTime(&ms, anchor, e));
  return anchor_ns + std::int64_t(double(ms) * 1e6);
}

std::unique_ptr<Comm> make_world_comm(ncclComm_t comm, RankState& state) {
  auto h = std::make_shared<Handle>();
  h->comm = comm;
  return std::make_unique<NcclComm>(std::move(h), state, std::vector<int>{});
}

void abort_world(Comm& world) noexcept {
  if (auto* c = dynamic_cast<NcclComm*>(&world)) c->handle().abort();
}

}  // namespace dtl::nccl
