#include "core/trace/trace.h"

#ifdef DTL_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

#include <algorithm>

#include "core/error.h"
#include "core/trace/run_clock.h"

namespace dtl {

// A stepped run (leave_out_pauses): the calling thread's run time (core/trace/run_clock.h),
// which leaves out the learner's pauses and the waits stepping adds.
std::int64_t Trace::paused_ns() const {
  return pauses_ ? std::int64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(RunClock::stall()).count()) : 0;
}

const char* event_kind_name(EventKind k) {
  switch (k) {
    case EventKind::compute: return "compute";
    case EventKind::send: return "send";
    case EventKind::recv: return "recv";
    case EventKind::collective: return "collective";
    case EventKind::alloc: return "alloc";
    case EventKind::free: return "free";
    case EventKind::phase: return "phase";
    case EventKind::mark: return "mark";
  }
  return "?";
}

const char* mem_tag_name(MemTag t) {
  switch (t) {
    case MemTag::param: return "param";
    case MemTag::grad: return "grad";
    case MemTag::optimizer: return "optimizer";
    case MemTag::activation: return "activation";
    case MemTag::comm: return "comm";
    case MemTag::other: return "other";
    case MemTag::master: return "master";
    case MemTag::gather: return "gather";
    case MemTag::data: return "data";
  }
  return "?";
}

const char* group_axis_name(GroupAxis a) {
  switch (a) {
    case GroupAxis::none: return "none";
    case GroupAxis::dp: return "dp";
    case GroupAxis::tp: return "tp";
    case GroupAxis::pp: return "pp";
  }
  return "?";
}

EventLog::EventLog() : blocks_(new std::atomic<Event*>[kMaxBlocks]) {
  for (std::size_t i = 0; i < kMaxBlocks; ++i) blocks_[i].store(nullptr, std::memory_order_relaxed);
}

EventLog::~EventLog() {
  for (std::size_t i = 0; i < kMaxBlocks; ++i) delete[] blocks_[i].load(std::memory_order_relaxed);
}

void EventLog::append(const Event& e) {
  const std::size_t n = count_.load(std::memory_order_relaxed);
  const std::size_t b = n / kBlock;
  if (b >= kMaxBlocks)
    throw Error("trace is full (" + std::to_string(n) + " events on one track); trace a shorter run");
  Event* block = blocks_[b].load(std::memory_order_relaxed);
  if (block == nullptr) {  // a new block every 4096 events: the only allocation
    block = new Event[kBlock];
    blocks_[b].store(block, std::memory_order_release);
  }
  block[n % kBlock] = e;
  count_.store(n + 1, std::memory_order_release);
}

Trace::Trace(int world_size) : world_size_(world_size), epoch_(std::chrono::steady_clock::now()) {
  DTL_CHECK(world_size >= 1, "a trace needs at least one rank");
  logs_.reserve(std::size_t(world_size) * kStreams);
  for (int i = 0; i < world_size * kStreams; ++i) logs_.push_back(std::make_unique<EventLog>());
  labels_.push_back("");  // id 0 = no label
  roles_.push_back({});
  label_ids_[""][role_code({})] = 0;
}

std::uint16_t Trace::label(std::string_view name, const Role& role) {
  std::lock_guard lock(mu_);
  auto by_name = label_ids_.find(name);
  if (by_name == label_ids_.end())
    by_name = label_ids_.emplace(std::string(name), std::map<std::uint64_t, std::uint16_t>{}).first;
  const std::uint64_t code = role_code(role);
  if (const auto known = by_name->second.find(code); known != by_name->second.end()) return known->second;
  DTL_CHECK(labels_.size() < 65535, "too many distinct trace labels");
  const auto id = std::uint16_t(labels_.size());
  by_name->second.emplace(code, id);
  labels_.emplace_back(name);
  roles_.push_back(role);
  return id;
}

Role Trace::label_role(std::uint16_t id) const {
  std::lock_guard lock(mu_);
  return id < roles_.size() ? roles_[id] : Role{};
}

std::vector<Role> Trace::roles() const {
  std::lock_guard lock(mu_);
  return roles_;
}

std::string Trace::label_name(std::uint16_t id) const {
  std::lock_guard lock(mu_);
  return id < labels_.size() ? labels_[id] : std::string("?");
}

std::vector<std::string> Trace::labels() const {
  std::lock_guard lock(mu_);
  return labels_;
}

void Trace::set_meta(const std::string& key, const std::string& value) {
  std::lock_guard lock(mu_);
  meta_[key] = value;
}

std::map<std::string, std::string> Trace::meta() const {
  std::lock_guard lock(mu_);
  return meta_;
}

std::vector<Event> Trace::snapshot() const {
  std::vector<Event> all;
  for (const auto& log : logs_) {
    const std::size_t n = log->size();
    for (std::size_t i = 0; i < n; ++i) all.push_back((*log)[i]);
  }
  std::stable_sort(all.begin(), all.end(), [](const Event& a, const Event& b) {
    return a.begin_ns != b.begin_ns ? a.begin_ns < b.begin_ns : a.rank < b.rank;
  });
  return all;
}

// With CUDA built, each span is also an NVTX range on its thread ("forward", "backward",
// ...), so Nsight Systems shows the lab's phases beside the GPU's kernels.
ScopedSpan::ScopedSpan(Trace* trace, int rank, EventKind kind, std::uint16_t label, int step) : trace_(trace) {
  if (!trace_) return;
  ev_.rank = rank;
  ev_.kind = kind;
  ev_.label = label;
  ev_.step = step;
  ev_.stream = kStreamMain;
#ifdef DTL_HAVE_NVTX
  nvtxRangePushA(trace_->label_name(label).c_str());
#endif
  ev_.begin_ns = trace_->now_ns();
  if (kind == EventKind::phase)
    trace_->record(Event{.begin_ns = ev_.begin_ns,
                         .end_ns = ev_.begin_ns,
                         .rank = rank,
                         .step = step,
                         .label = label,
                         .kind = EventKind::mark});
}

ScopedSpan::~ScopedSpan() {
  if (!trace_) return;
  ev_.end_ns = trace_->now_ns();
#ifdef DTL_HAVE_NVTX
  nvtxRangePop();
#endif
  trace_->record(ev_);
}

}  // namespace dtl
