// What the context-parallel lab measures (cp_lab_internal.h): each attention call read from
// the rank's trace, the one-rank references, and one algorithm's run on the P ranks.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include "core/error.h"
#include "core/trace/run_clock.h"
#include "core/trace/trace.h"
#include "labs/context_parallel/cp_internal.h"
#include "labs/context_parallel/cp_lab_internal.h"
#include "labs/measure.h"
#include "labs/train/data.h"
#include "labs/train/gpt_sharded.h"
#include "labs/train/reference.h"

namespace dtl {

CpMarks cp_marks(Comm& comm) {
  Trace& tr = *comm.trace();
  return {tr.log(comm.global_rank(), kStreamMain).size(), tr.log(comm.global_rank(), kStreamComm).size()};
}

namespace {

double seconds(const Event& e) { return double(e.end_ns - e.begin_ns) * 1e-9; }

// The ring's hops between the marks: the K/V receive of step t (tag base + t) against the
// block of step t it was posted before; the dK/dV receives, posted after their block.
void ring_hops(const EventLog& main, CpMarks from, CpMarks to, const std::vector<const Event*>& blocks,
               CpCallTrace& t) {
  for (std::size_t i = from.main; i < to.main; ++i) {
    const Event& e = main[i];
    if (e.kind != EventKind::recv) continue;
    if (e.tag >= cp::kRingTagDkv && e.tag < cp::kRingTagDkv + 100) {
      t.dkv_s += seconds(e);
      continue;
    }
    const int base = e.tag >= cp::kRingTagKvBack ? cp::kRingTagKvBack : cp::kRingTagKv;
    const auto block =
        std::find_if(blocks.begin(), blocks.end(), [&](const Event* b) { return b->step == e.tag - base; });
    t.hop_s += seconds(e);
    if (block != blocks.end()) t.exposed_s += double(std::max<std::int64_t>(0, e.end_ns - (*block)->end_ns)) * 1e-9;
  }
}

}  // namespace

CpCallTrace cp_call_trace(Comm& comm, CpMarks from, CpMarks to) {
  Trace& tr = *comm.trace();
  const std::uint64_t P = std::uint64_t(comm.size());
  const EventLog& main = tr.log(comm.global_rank(), kStreamMain);
  const EventLog& coll = tr.log(comm.global_rank(), kStreamComm);
  CpCallTrace t;
  std::vector<const Event*> blocks;
  for (std::size_t i = from.main; i < to.main; ++i) {
    const Event& e = main[i];
    if (e.kind == EventKind::send) t.sent += double(e.bytes);
    if (e.kind != EventKind::compute) continue;
    const Role role = tr.label_role(e.label);
    if (cp::is_ring_block(role)) blocks.push_back(&e);
    if (cp::is_ring_block(role) || cp::is_attention_block(role)) t.compute_s += seconds(e);
  }
  for (std::size_t i = from.comm; i < to.comm; ++i)
    if (coll[i].kind == EventKind::collective) t.sent += double(coll[i].bytes / P * (P - 1));
  ring_hops(main, from, to, blocks, t);
  return t;
}

void CpCallLog::add(const CpCallTrace& t, bool backward) {
  const double want_bytes = double(backward ? want.backward : want.forward);
  double& worst = backward ? bwd_bytes : fwd_bytes;
  double& dev = backward ? bwd_dev : fwd_dev;
  if (std::fabs(t.sent - want_bytes) > dev) dev = std::fabs(t.sent - want_bytes), worst = t.sent;
  if (!backward) calls += 1;
  if (!timed) return;
  compute_s += t.compute_s, hop_s += t.hop_s, exposed_s += t.exposed_s, dkv_s += t.dkv_s;
}

CpReference cp_dense_reference(Comm& comm, const CpSettings& s) {
  const TensorList all = reference_on_rank0(comm, [&](Comm& alone) {
    MemoryTracker mem(alone.global_rank(), nullptr);
    Gpt gpt(s.gpt(), ex::TpGroup{alone, ex::TpMode::plain}, mem, 7);
    AdamW opt(gpt.whole_params(), Device::cpu(), mem, s.adamw);
    TensorList out{{}, {}};  // the loss and the activation peak, the gradients, the weights
    for (int step = 0; step < s.steps; ++step) {
      std::vector<int> tokens, targets;
      counting_batch(step, s.seq, s.batch, s.vocab, tokens, targets);
      const float loss = gpt.forward_backward(tokens.data(), targets.data());
      if (step == 0) {
        out[0] = {loss};
        for (std::vector<float>& g : gpt_tensors(gpt, true)) out.push_back(std::move(g));
      }
      opt.step(gpt.whole_params());
    }
    out[1] = {float(mem.peak(MemTag::activation))};
    for (std::vector<float>& w : gpt_tensors(gpt, false)) out.push_back(std::move(w));
    return out;
  });
  CpReference ref;
  const std::size_t n = (all.size() - 2) / 2;
  ref.first_loss = all.at(0).at(0);
  ref.activation_peak = double(all.at(1).at(0));
  ref.first_grads.assign(all.begin() + 2, all.begin() + 2 + std::ptrdiff_t(n));
  ref.final_params.assign(all.begin() + 2 + std::ptrdiff_t(n), all.end());
  return ref;
}

namespace {

// The same algorithm on one rank (a group of one, every position): its activation peak, one step.
double one_rank_activation_peak(Comm& comm, const CpSettings& s, cp::CpAlgo algo) {
  const TensorList got = reference_on_rank0(comm, [&](Comm& alone) {
    MemoryTracker mem(alone.global_rank(), nullptr);
    CpGptRun run(s, alone, algo, mem, nullptr);
    run.train_step(0);
    return TensorList{{float(mem.peak(MemTag::activation))}};
  });
  return double(got.at(0).at(0));
}

void compare_first_step(Comm& comm, CpGptRun& run, float loss, const CpReference& ref, CpMeasurement& m) {
  m.loss_diff = std::fabs(double(loss) - double(ref.first_loss));
  m.max_grad_rel_diff = 0;
  const std::vector<std::vector<float>> g = run.tensors(true);
  for (std::size_t i = 0; i < g.size(); ++i)
    m.max_grad_rel_diff = larger_difference(
        m.max_grad_rel_diff, i < ref.first_grads.size() ? max_relative_difference(g[i], ref.first_grads[i]) : INFINITY);
  m.max_grad_rel_diff = max_over_ranks(comm, m.max_grad_rel_diff);
}

void compare_final_weights(Comm& comm, CpGptRun& run, const CpReference& ref, CpMeasurement& m) {
  m.max_weight_diff = 0;
  const std::vector<std::vector<float>> w = run.tensors(false);
  for (std::size_t i = 0; i < w.size(); ++i)
    m.max_weight_diff = larger_difference(
        m.max_weight_diff, i < ref.final_params.size() ? max_abs_difference(w[i], ref.final_params[i]) : INFINITY);
  m.max_weight_diff = max_over_ranks(comm, m.max_weight_diff);
}

// The bytes the call farthest from the formula sent, over every rank (−1: no rank made a call).
double farthest_call(Comm& comm, double dev, double sent) {
  const double most = max_over_ranks(comm, dev);
  const double bytes = max_over_ranks(comm, dev == most ? sent : -INFINITY);
  return most < 0 ? -1.0 : bytes;
}

// The calls' tallies over the ranks: the worst bytes, the busiest rank's and the mean time.
void combine_calls(Comm& comm, const CpCallLog& log, int timed_steps, CpMeasurement& m) {
  const double per = timed_steps > 0 ? 1.0 / timed_steps : 0.0;
  m.fwd_bytes = farthest_call(comm, log.fwd_dev, log.fwd_bytes);
  m.bwd_bytes = farthest_call(comm, log.bwd_dev, log.bwd_bytes);
  m.calls = max_over_ranks(comm, log.calls);
  m.attn_seconds_max = max_over_ranks(comm, log.compute_s * per);
  double sums[4] = {log.compute_s * per, log.hop_s * per, log.exposed_s * per, log.dkv_s * per};
  comm.all_reduce(sums, sums, 4, DType::f64, ReduceOp::sum);
  m.attn_seconds_mean = sums[0] / comm.size();
  m.hop_seconds = sums[1] / comm.size(), m.exposed_seconds = sums[2] / comm.size(),
  m.dkv_seconds = sums[3] / comm.size();
}

}  // namespace

CpMeasurement run_cp_algo(Comm& comm, const LabConfig& cfg, const CpSettings& s, cp::CpAlgo algo,
                          const CpReference* ref) {
  if (!comm.trace())
    throw UsageError("the context-parallel lab reads its bytes and times from the trace: run it with tracing on");
  CpMeasurement m;
  m.algo = algo;
  if (ref) m.one_rank_activation_peak = one_rank_activation_peak(comm, s, algo);
  const std::string name = cp::cp_algo_name(algo);
  comm.barrier();
  const ScopedSpan phase(comm.trace(), comm.global_rank(), EventKind::phase,
                         comm.trace()->label("cp " + name, cp::cp_phase_role(algo)));
  MemoryTracker mem(comm.global_rank(), comm.trace());
  CpCallLog log;
  log.want = cp::cp_bytes_per_rank(algo, s.layer(), comm.size());
  CpGptRun run(s, comm, algo, mem, &log);
  std::vector<double> steps;
  // --resume: every rank reads the whole model and AdamW's moments (the tensor_parallel lab's too).
  const int first = resume_run(comm, s.resume, counting_gpt_resume_rules(s.batch, s.steps), m.checkpoints,
                               [&](const Manifest& man) { return run.load_checkpoint(man); });
  m.steps_run = s.steps - first;
  for (int step = first; step < s.steps; ++step) {
    report_progress(comm, cfg, name + ": step " + std::to_string(step + 1) + " of " + std::to_string(s.steps));
    log.timed = step > first || s.steps == first + 1;  // the first of several is a warm-up
    const auto t0 = RunClock::now();
    float loss = 0;
    {
      const ScopedSpan whole(comm.trace(), comm.global_rank(), EventKind::compute, comm.trace()->label("training step"),
                             step);
      loss = run.train_step(step);
    }
    const double took = max_over_ranks(comm, std::chrono::duration<double>(RunClock::now() - t0).count());
    if (log.timed) steps.push_back(took);
    (step == first ? m.first_loss : m.last_loss) = loss;
    if (step == 0 && ref) compare_first_step(comm, run, loss, *ref, m);
    run.adamw_step();
    checkpoint_if_due(comm, checkpoint_plan(s),
                      train_position("context_parallel", step + 1, counting_gpt_resume_rules(s.batch, s.steps).data),
                      m.checkpoints, [&] { return run.stage_checkpoint(); });
  }
  finish_checkpoints(comm, m.checkpoints);
  if (m.steps_run == 1) m.last_loss = m.first_loss;
  if (ref) compare_final_weights(comm, run, *ref, m);
  combine_calls(comm, log, int(steps.size()), m);
  m.activation_peak = max_over_ranks(comm, double(mem.peak(MemTag::activation)));
  m.step = repeated(steps);
  return m;
}

}  // namespace dtl
