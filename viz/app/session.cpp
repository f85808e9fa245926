#include "viz/app/session.h"

#include "core/comm/threads_backend.h"
#include "labs/collectives/collectives_lab.h"
#include "labs/launch.h"
#include "labs/simulate/sim_trace.h"
#include "viz/model/torch_trace.h"

namespace dtl::viz {

std::unique_ptr<Session> Session::replay(const std::vector<std::string>& paths) {
  std::unique_ptr<Session> s(new Session());
  s->data_ = is_torch_run(paths) ? load_torch_run_trace(paths) : load_trace(paths.at(0));
  if (const std::string* lab = s->data_.meta_of(MetaKey::lab)) s->lab_ = find_lab(*lab);
  s->unit_ = step_unit(s->lab_);
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
  RunRequest request;
  request.cfg = std::move(cfg);
  request.mode = RunMode::live;
  const Launch run = launch(lab, std::move(request));  // a configuration that cannot run: exit 2, no window
  std::unique_ptr<Session> s(new Session());
  s->lab_ = &lab;
  s->unit_ = run.unit;
  s->cfg_ = run.cfg;
  s->trace_ = std::make_unique<Trace>(run.cfg.ranks);
  run.start_trace(*s->trace_);
  s->gate_ = std::make_unique<StepGate>(run.cfg.ranks, run.unit);
  s->data_ = from_trace(*s->trace_);  // the ranks and the metadata, before the first event arrives
  s->index_ = index_trace(s->data_, s->unit_);
  ThreadsOptions opt = run.threads;
  opt.trace = s->trace_.get();
  opt.gate = s->gate_.get();
  Session* self = s.get();
  s->runner_ = std::thread([self, opt] {
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
