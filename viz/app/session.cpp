#include "viz/app/session.h"

#include "core/comm/threads_backend.h"
#include "labs/collectives/collectives_lab.h"
#include "labs/simulate/sim_trace.h"

namespace dtl::viz {

namespace {
// Labs built on library collectives step by collective (LabInfo::step_unit says which).
StepUnit unit_of(const LabInfo* lab) { return lab ? lab->step_unit : StepUnit::transfers; }
}  // namespace

std::unique_ptr<Session> Session::replay(const std::string& path) {
  std::unique_ptr<Session> s(new Session());
  s->data_ = load_trace(path);
  if (const std::string* lab = s->data_.meta_of(MetaKey::lab)) s->lab_ = find_lab(*lab);
  s->unit_ = unit_of(s->lab_);
  s->index_ = index_trace(s->data_, s->unit_);
  return s;
}

std::vector<ViewKind> Session::views() const {
  if (lab_) return lab_->views;
  if (const std::string* sim = data_.meta_of(MetaKey::simulated); sim && *sim == "true")
    return sim::simulated_trace_views(data_.meta_of(MetaKey::grid) != nullptr);
  if (!index_.transfers.empty()) return {kRingView, ViewKind::report, ViewKind::memory, ViewKind::timeline};
  return {ViewKind::timeline, ViewKind::memory, ViewKind::report};
}

std::unique_ptr<Session> Session::live(const LabInfo& lab, LabConfig cfg) {
  std::unique_ptr<Session> s(new Session());
  s->lab_ = &lab;
  s->unit_ = unit_of(&lab);
  s->index_.unit = s->unit_;
  for (const auto& [name, value] : lab.live_options)  // what a stepped run starts from, unless given
    if (!cfg.options.has(name)) cfg.options.set_default(name, value);
  s->cfg_ = with_defaults(lab, std::move(cfg));
  if (lab.check_config) lab.check_config(s->cfg_);  // a configuration that cannot run: exit 2, no window
  s->cfg_.iters = 0;                                // one traced run: every transfer (or collective) is a step
  s->cfg_.warmup = 0;
  s->trace_ = std::make_unique<Trace>(s->cfg_.ranks);
  Trace& trace = *s->trace_;
  trace.set_meta(MetaKey::lab, lab.name);
  for (const auto& [k, v] : s->cfg_.options.text()) trace.set_meta(k, v);
  trace.set_meta(MetaKey::bytes, std::to_string(s->cfg_.bytes));
  trace.set_meta(MetaKey::device, device_meta(s->cfg_));
  trace.set_meta(MetaKey::chunks, std::to_string(lab.chunk_grid ? lab.chunk_grid(s->cfg_) : s->cfg_.ranks));
  s->gate_ = std::make_unique<StepGate>(s->cfg_.ranks, s->unit_);
  s->data_ = from_trace(trace);  // the ranks and the metadata, before the first event arrives
  s->index_ = index_trace(s->data_, s->unit_);
  Session* self = s.get();
  s->runner_ = std::thread([self] {
    ThreadsOptions opt;
    opt.world_size = self->cfg_.ranks;
    opt.trace = self->trace_.get();
    opt.gate = self->gate_.get();
    opt.compute_nice = self->lab_->overlaps_compute ? 10 : 0;  // as dtlab run: collectives get the cores when ready
    Report report;
    const RunResult r = run_threads(opt, [&](Comm& c) {
      Report mine = self->lab_->run(c, self->cfg_);
      if (c.rank() == 0) report = std::move(mine);
    });
    std::lock_guard lock(self->mu_);
    self->error_ = r.error;
    if (r.ok()) self->report_json_ = report.to_json().dump();
    self->done_ = true;
  });
  s->refresh();
  return s;
}

Session::~Session() {
  if (runner_.joinable()) {
    gate_->release_all();  // let the run finish at full speed
    runner_.join();
  }
}

void Session::refresh() {
  if (!live()) return;
  // The trace's clock leaves out the learner's pauses (Trace::leave_out_pauses): its times
  // are the run's own, as in a free run, so nothing is cut out of the pictures here.
  std::size_t n = 0;
  for (int r = 0; r < trace_->world_size(); ++r)
    for (int s = 0; s < Trace::kStreams; ++s) n += trace_->log(r, s).size();
  {
    std::lock_guard lock(mu_);
    if (!report_json_.empty()) trace_->set_meta(MetaKey::report, report_json_);
  }
  const char* report = meta_key_name(MetaKey::report);
  if (n == seen_events_ && data_.meta.count(report) == trace_->meta().count(report)) return;
  seen_events_ = n;
  data_ = from_trace(*trace_);
  index_ = index_trace(data_, unit_, &landed_.update(data_.events));  // the order the learner saw
}

bool Session::can_advance() const { return live() && gate_->poll() == StepGate::Poll::transfer_waiting; }

void Session::advance_one() {
  if (can_advance()) gate_->release_one();
}

bool Session::finished() const {
  if (!live()) return true;
  std::lock_guard lock(const_cast<std::mutex&>(mu_));
  return done_;
}

std::string Session::status() const {
  if (!live())
    return data_.meta_of(MetaKey::error) ? "trace of a failed run: " + *data_.meta_of(MetaKey::error) : "replay";
  std::lock_guard lock(const_cast<std::mutex&>(mu_));
  if (done_) return error_.empty() ? "finished" : "failed: " + error_;
  switch (gate_->poll()) {
    case StepGate::Poll::transfer_waiting: return std::string("waiting for you: the next ") + step_name() + " is ready";
    case StepGate::Poll::all_finished: return "finishing";
    case StepGate::Poll::aborted: return "aborted";
    default: return "running";
  }
}

}  // namespace dtl::viz
