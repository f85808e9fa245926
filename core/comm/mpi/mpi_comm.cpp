// dtl::Comm on Open MPI. Every MPI call is checked (DTL_MPI_CHECK names file:line).
#include <mpi.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/comm/mpi/mpi_check.h"
#include "core/comm/mpi/mpi_types.h"
#include "core/comm/mpi_backend.h"
#include "core/comm/wait_words.h"
#include "core/trace/chrome_writer.h"
#include "core/trace/trace.h"

namespace dtl {

namespace {

// What this process shares between its Comms, its requests and its watchdog.
struct MpiShared {
  Trace* trace = nullptr;
  FaultPlan faults;
  int world_rank = 0;
  int sends_posted = 0;
  int collectives_posted = 0;  // FaultPlan steps, when the plan counts collectives
  std::atomic<std::uint64_t> progress{0};
  std::mutex mu;
  std::string waiting_on;  // guarded by mu; read by the watchdog
};

class MpiRequest final : public RequestImpl {
 public:
  MpiRequest(MpiShared& sh, std::string what) : sh_(sh), what_(std::move(what)) {}
  MPI_Request req = MPI_REQUEST_NULL;
  std::function<void(const MPI_Status&)> on_complete;  // reduce from staging, average, checks
  Event ev;
  bool traced = false;

  void wait() override {
    if (done_) return;
    {
      std::lock_guard lock(sh_.mu);
      sh_.waiting_on = what_;
    }
    MPI_Status st;
    DTL_MPI_CHECK(MPI_Wait(&req, &st));
    {
      std::lock_guard lock(sh_.mu);
      sh_.waiting_on.clear();
    }
    finish(st);
  }
  bool test() override {
    if (done_) return true;
    int flag = 0;
    MPI_Status st;
    DTL_MPI_CHECK(MPI_Test(&req, &flag, &st));
    if (flag) finish(st);
    return flag != 0;
  }

 private:
  void finish(const MPI_Status& st) {
    done_ = true;
    sh_.progress.fetch_add(1);
    if (on_complete) on_complete(st);
    if (traced) {
      ev.end_ns = sh_.trace->now_ns();
      sh_.trace->record(ev);
    }
  }
  MpiShared& sh_;
  std::string what_;
  bool done_ = false;
};

class MpiComm final : public Comm {
 public:
  MpiComm(MPI_Comm comm, MpiShared& sh, bool owned) : comm_(comm), sh_(sh), owned_(owned) {
    DTL_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
    DTL_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
    DTL_MPI_CHECK(MPI_Comm_size(comm_, &size_));
    MPI_Group mine, world;
    DTL_MPI_CHECK(MPI_Comm_group(comm_, &mine));
    DTL_MPI_CHECK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    std::vector<int> local(std::size_t(size_), 0);
    for (int i = 0; i < size_; ++i) local[std::size_t(i)] = i;
    globals_.resize(std::size_t(size_));
    DTL_MPI_CHECK(MPI_Group_translate_ranks(mine, size_, local.data(), world, globals_.data()));
    DTL_MPI_CHECK(MPI_Group_free(&mine));
    DTL_MPI_CHECK(MPI_Group_free(&world));
  }
  ~MpiComm() override {
    if (owned_) MPI_Comm_free(&comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int global_rank() const override { return sh_.world_rank; }
  int global_rank_of(int r) const override { return globals_.at(std::size_t(r)); }
  BackendKind backend() const override { return BackendKind::mpi; }
  Trace* trace() override { return sh_.trace; }

  Request isend(const void* buf, std::size_t bytes, int dst, int tag, TransferInfo info) override {
    check_peer(dst, "send");
    inject_faults(StepUnit::transfers, sh_.sends_posted++, "send");
    auto r = make("send to rank " + std::to_string(global_rank_of(dst)) + " tag " + std::to_string(tag),
                  EventKind::send, bytes, dst, tag, info);
    DTL_MPI_CHECK(MPI_Isend(buf, as_int(bytes, "send"), MPI_BYTE, dst, tag, comm_, &r->req));
    return Request(r);
  }

  Request irecv(void* buf, std::size_t bytes, int src, int tag, TransferInfo info) override {
    return Request(post_recv(buf, bytes, src, tag, info, false));
  }

  Request irecv_reduce(void* buf, std::size_t count, DType t, ReduceOp op, int src, int tag,
                       TransferInfo info) override {
    // MPI has no receive-and-reduce: stage the message, combine on completion.
    auto staging = std::make_shared<std::vector<char>>(count * dtype_size(t));
    Request inner(post_recv(staging->data(), staging->size(), src, tag, info, true));
    return Request(std::make_shared<StagedReduce>(std::move(inner), staging, buf, count, t, op));
  }

 private:
  std::shared_ptr<MpiRequest> post_recv(void* buf, std::size_t bytes, int src, int tag, const TransferInfo& info,
                                        bool reduce) {
    check_peer(src, "recv");
    auto r = make("recv from rank " + std::to_string(global_rank_of(src)) + " tag " + std::to_string(tag),
                  EventKind::recv, bytes, src, tag, info);
    r->on_complete = [bytes, src_g = global_rank_of(src), me = sh_.world_rank, tag](const MPI_Status& st) {
      int got = 0;
      DTL_MPI_CHECK(MPI_Get_count(&st, MPI_BYTE, &got));
      if (std::size_t(got) != bytes)
        throw Error("rank " + std::to_string(me) + " posted a receive of " + std::to_string(bytes) +
                    " bytes from rank " + std::to_string(src_g) + " (tag " + std::to_string(tag) +
                    "), but the message has " + std::to_string(got) + " bytes; make the counts on both sides agree");
    };
    if (reduce) r->ev.flags |= kFlagReduce;  // the trace says the data was combined, as on threads
    DTL_MPI_CHECK(MPI_Irecv(buf, as_int(bytes, "recv"), MPI_BYTE, src, tag, comm_, &r->req));
    return r;
  }

 public:
  Request iall_reduce(const void* s, void* r, std::size_t n, DType t, ReduceOp op) override {
    auto q = collective(CollectiveKind::all_reduce, n * dtype_size(t), average_on_completion(r, n, t, op));
    DTL_MPI_CHECK(MPI_Iallreduce(s == r ? MPI_IN_PLACE : s, r, as_int(n, "all_reduce"), mpi_type(t), mpi_op(t, op),
                                 comm_, &q->req));
    return Request(q);
  }
  Request ireduce_scatter(const void* s, void* r, std::size_t n, DType t, ReduceOp op) override {
    // NCCL's in-place form (r == s + rank·n) is not MPI's: stage the output then.
    const std::size_t bytes = n * dtype_size(t);
    const bool overlaps =
        r >= s && static_cast<const char*>(r) < static_cast<const char*>(s) + bytes * std::size_t(size_);
    auto staging = overlaps ? std::make_shared<std::vector<char>>(bytes) : nullptr;
    void* out = staging ? staging->data() : r;
    auto q = collective(CollectiveKind::reduce_scatter, bytes * std::size_t(size_),
                        [staging, r, bytes, n, t, op, p = size_](const MPI_Status&) {
                          if (staging) std::memcpy(r, staging->data(), bytes);
                          finish_average(r, n, t, op, p);
                        });
    DTL_MPI_CHECK(
        MPI_Ireduce_scatter_block(s, out, as_int(n, "reduce_scatter"), mpi_type(t), mpi_op(t, op), comm_, &q->req));
    return Request(q);
  }
  Request iall_gather(const void* s, void* r, std::size_t n, DType t) override {
    const bool in_place =
        s == static_cast<char*>(r) + std::size_t(rank_) * n * dtype_size(t);  // same convention as MPI
    auto q = collective(CollectiveKind::all_gather, n * dtype_size(t) * std::size_t(size_), nullptr);
    DTL_MPI_CHECK(MPI_Iallgather(in_place ? MPI_IN_PLACE : s, as_int(n, "all_gather"), mpi_type(t), r, int(n),
                                 mpi_type(t), comm_, &q->req));
    return Request(q);
  }
  Request ibroadcast(void* b, std::size_t n, DType t, int root) override {
    check_peer(root, "broadcast root");
    auto q = collective(CollectiveKind::broadcast, n * dtype_size(t), nullptr);
    DTL_MPI_CHECK(MPI_Ibcast(b, as_int(n, "broadcast"), mpi_type(t), root, comm_, &q->req));
    return Request(q);
  }
  Request ireduce(const void* s, void* r, std::size_t n, DType t, ReduceOp op, int root) override {
    check_peer(root, "reduce root");
    auto q = collective(CollectiveKind::reduce, n * dtype_size(t),
                        rank_ == root ? average_on_completion(r, n, t, op) : std::function<void(const MPI_Status&)>{});
    const void* send = (s == r && rank_ == root) ? MPI_IN_PLACE : s;
    DTL_MPI_CHECK(MPI_Ireduce(send, r, as_int(n, "reduce"), mpi_type(t), mpi_op(t, op), root, comm_, &q->req));
    return Request(q);
  }
  Request iall_to_all(const void* s, void* r, std::size_t n, DType t) override {
    if (s == r && size_ > 1)
      throw Error("all_to_all cannot run in place (send and recv are the same buffer); give it a separate output");
    auto q = collective(CollectiveKind::all_to_all, n * dtype_size(t) * std::size_t(size_), nullptr);
    DTL_MPI_CHECK(MPI_Ialltoall(s, as_int(n, "all_to_all"), mpi_type(t), r, int(n), mpi_type(t), comm_, &q->req));
    return Request(q);
  }
  // MPI_Ialltoallv takes int counts and displacements; they live in the request until it completes.
  Request iall_to_allv(const void* s, void* r, const AllToAllvLayout& l, DType t) override {
    check_all_to_allv_layout(l, size_);
    if (s == r && size_ > 1)
      throw Error("all_to_allv cannot run in place (send and recv are the same buffer); give it a separate output");
    using Ints = std::array<std::vector<int>, 4>;
    auto ints =
        std::make_shared<Ints>(Ints{as_ints(l.send_counts, "all_to_allv"), as_ints(l.send_displs, "all_to_allv"),
                                    as_ints(l.recv_counts, "all_to_allv"), as_ints(l.recv_displs, "all_to_allv")});
    auto q = collective(CollectiveKind::all_to_allv, l.sent() * dtype_size(t), [ints](const MPI_Status&) {});
    const auto& v = *ints;
    DTL_MPI_CHECK(MPI_Ialltoallv(s, v[0].data(), v[1].data(), mpi_type(t), r, v[2].data(), v[3].data(), mpi_type(t),
                                 comm_, &q->req));
    return Request(q);
  }
  Request ibarrier() override {
    auto q = collective(CollectiveKind::barrier, 0, nullptr);
    DTL_MPI_CHECK(MPI_Ibarrier(comm_, &q->req));
    return Request(q);
  }

  std::unique_ptr<Comm> split(int color, int key) override {
    MPI_Comm sub = MPI_COMM_NULL;
    DTL_MPI_CHECK(MPI_Comm_split(comm_, color < 0 ? MPI_UNDEFINED : color, key, &sub));
    if (sub == MPI_COMM_NULL) return nullptr;
    auto c = std::make_unique<MpiComm>(sub, sh_, true);
    c->mark_subgroup();
    return c;
  }

 private:
  // recv_reduce's request: waits for the staged message, then combines it.
  class StagedReduce final : public RequestImpl {
   public:
    StagedReduce(Request inner, std::shared_ptr<std::vector<char>> staging, void* buf, std::size_t n, DType t,
                 ReduceOp op)
        : inner_(std::move(inner)), staging_(std::move(staging)), buf_(buf), n_(n), t_(t), op_(op) {}
    void wait() override {
      inner_.wait();
      combine();
    }
    bool test() override {
      if (!inner_.test()) return false;
      combine();
      return true;
    }

   private:
    void combine() {
      if (staging_) reduce_into(buf_, staging_->data(), n_, t_, op_);
      staging_.reset();
    }
    Request inner_;
    std::shared_ptr<std::vector<char>> staging_;
    void* buf_;
    std::size_t n_;
    DType t_;
    ReduceOp op_;
  };

  void check_peer(int peer, const char* what) const {
    if (peer < 0 || peer >= size_)
      throw Error("rank " + std::to_string(sh_.world_rank) + ": " + what + " names rank " + std::to_string(peer) +
                  ", but this group has ranks 0.." + std::to_string(size_ - 1));
  }
  std::function<void(const MPI_Status&)> average_on_completion(void* r, std::size_t n, DType t, ReduceOp op) {
    if (op != ReduceOp::avg) return {};
    return [r, n, t, op, p = size_](const MPI_Status&) { finish_average(r, n, t, op, p); };
  }
  std::shared_ptr<MpiRequest> make(std::string what, EventKind kind, std::size_t bytes, int peer, int tag,
                                   const TransferInfo& info) {
    auto r = std::make_shared<MpiRequest>(sh_, with_wait_words(info.what, what));  // the lab's words first
    if (sh_.trace) {
      r->traced = true;
      r->ev = Event{.begin_ns = sh_.trace->now_ns(),
                    .bytes = bytes,
                    .rank = sh_.world_rank,
                    .peer = global_rank_of(peer),
                    .tag = tag,
                    .step = info.step,
                    .chunk = info.chunk,
                    .chunk_count = std::int16_t(info.chunk_count),
                    .kind = kind};
      stamp_group(r->ev);
    }
    return r;
  }
  // --inject-fault / --inject-hang at this rank's n-th operation of `kind`.
  void inject_faults(StepUnit kind, int n, const char* what) {
    const FaultPlan::Action act = sh_.faults.at(kind, sh_.world_rank, n);
    if (act == FaultPlan::Action::fail)
      throw Error("injected fault on rank " + std::to_string(sh_.world_rank) + " at its " +
                  FaultPlan::operation(what, n) + " (--inject-fault)");
    if (act != FaultPlan::Action::hang) return;
    {
      std::lock_guard lock(sh_.mu);
      sh_.waiting_on = "nothing: it stopped communicating on purpose before its " + FaultPlan::operation(what, n) +
                       " (--inject-hang)";
    }
    // Said now: whichever process's watchdog ends the job first names only what it waits on,
    // and the others' lines may never be printed (MPI_Abort), so the silent rank speaks first.
    std::fprintf(stderr,
                 "dtlab: rank %d stops communicating on purpose before its %s (--inject-hang); the watchdog "
                 "ends the job after --timeout\n",
                 sh_.world_rank, FaultPlan::operation(what, n).c_str());
    for (;;) std::this_thread::sleep_for(std::chrono::milliseconds(50));  // until the watchdog aborts the job
  }

  std::shared_ptr<MpiRequest> collective(CollectiveKind kind, std::size_t bytes,
                                         std::function<void(const MPI_Status&)> done) {
    const char* name = collective_kind_name(kind);
    inject_faults(StepUnit::collectives, sh_.collectives_posted++, name);
    const Role role = library_collective_role(kind);
    const std::string words = collective_wait_words(role), size = std::to_string(bytes) + " B";
    auto r = std::make_shared<MpiRequest>(
        sh_, words.empty() ? std::string(name) + " (" + size + ")" : words + " (" + name + ", " + size + ")");
    r->on_complete = std::move(done);
    if (sh_.trace) {
      r->traced = true;
      r->ev = Event{.begin_ns = sh_.trace->now_ns(),
                    .bytes = bytes,
                    .rank = sh_.world_rank,
                    .label = sh_.trace->label(name, role),
                    .kind = EventKind::collective,
                    .stream = kStreamComm};
      stamp_group(r->ev);
    }
    return r;
  }

  MPI_Comm comm_;
  MpiShared& sh_;
  bool owned_;
  int rank_ = 0, size_ = 1;
  std::vector<int> globals_;
};

}  // namespace

bool mpi_backend_built() { return true; }

RunResult run_mpi(const MpiOptions& opt, const std::function<void(Comm&)>& body) {
  const MpiWorld w = mpi_init();
  MpiShared sh;
  sh.trace = opt.trace;
  sh.faults = opt.faults;
  sh.world_rank = w.rank;
  std::atomic<bool> finished{false};
  // Watchdog: this rank alone knows what it waits on; it says so and ends the job.
  std::thread watchdog([&] {
    std::uint64_t last = sh.progress.load();
    auto since = std::chrono::steady_clock::now();
    while (!finished.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      const std::uint64_t p = sh.progress.load();
      std::string waiting;
      {
        std::lock_guard lock(sh.mu);
        waiting = sh.waiting_on;
      }
      if (p != last || waiting.empty()) {
        last = p;
        since = std::chrono::steady_clock::now();
      } else if (opt.timeout_s > 0 &&
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count() > opt.timeout_s) {
        std::fprintf(stderr, "dtlab: watchdog: rank %d waits %s for more than %g s (--timeout); aborting every rank\n",
                     w.rank, waiting.c_str(), opt.timeout_s);
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
    }
  });
  RunResult result;
  result.rank_errors.resize(std::size_t(w.size));
  try {
    MpiComm world(MPI_COMM_WORLD, sh, false);
    body(world);
    // A planned fault this rank never reached is a usage error here too (threads: runner.cpp).
    const int made = opt.faults.counted == StepUnit::transfers ? sh.sends_posted : sh.collectives_posted;
    if (const std::string why = opt.faults.unfired(w.rank, made); !why.empty()) throw UsageError(why);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dtlab: rank %d failed: %s\ndtlab: aborting every rank (MPI_Abort)\n", w.rank, e.what());
    if (opt.trace && !opt.trace_path.empty()) {  // what this rank recorded up to the failure
      try {
        write_chrome_trace(*opt.trace, opt.trace_path + ".rank" + std::to_string(w.rank) + ".json", e.what());
      } catch (...) {}
    }
    // The exit code mpirun reports: 2 for bad usage (the same on every rank), as without MPI.
    MPI_Abort(MPI_COMM_WORLD, dynamic_cast<const UsageError*>(&e) ? 2 : 1);
  }
  finished.store(true);
  watchdog.join();
  return result;
}

}  // namespace dtl
