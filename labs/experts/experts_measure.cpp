// What the experts lab measures (experts_internal.h).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>

#include <nlohmann/json.hpp>

#include "core/theory/collectives.h"
#include "core/trace/trace.h"
#include "labs/experts/experts_internal.h"
#include "labs/measure.h"

namespace dtl {

namespace {

double sum_over_ranks(Comm& comm, double v) {
  comm.all_reduce(&v, &v, 1, DType::f64, ReduceOp::sum);
  return v;
}

// The bytes each all_to_allv of a step moves from this rank, in the order the step posts
// them: forward, block by block, the dispatch (its kept slots' rows) and the combine (the
// rows its experts computed); backward, last block first, the same two layouts again.
std::vector<double> expected_all_to_allv_bytes(const ExpertsSettings& s, const moe::MoeModel& model) {
  const double row = double(s.shape.hidden) * sizeof(float);
  std::vector<double> fwd, bwd;
  for (const moe::BlockRouting& b : model.routing()) {
    const double sent = double(std::accumulate(b.rows_to_rank.begin(), b.rows_to_rank.end(), std::size_t(0)));
    fwd.push_back(sent * row), fwd.push_back(double(b.rows_received) * row);
  }
  for (std::size_t l = model.routing().size(); l-- > 0;) bwd.push_back(fwd[2 * l]), bwd.push_back(fwd[2 * l + 1]);
  fwd.insert(fwd.end(), bwd.begin(), bwd.end());
  return fwd;
}

}  // namespace

TraceMark trace_mark(Comm& comm) {
  return {comm.trace() ? comm.trace()->log(comm.global_rank(), kStreamComm).size() : 0};
}

void measure_routing(Comm& comm, const ExpertsSettings& s, const moe::MoeModel& model, ExpertsMeasurement& m) {
  const std::size_t E = std::size_t(s.shape.experts);
  double dropped = 0, slots = 0;
  for (const moe::BlockRouting& b : model.routing()) {
    std::vector<double> routed(E);
    for (std::size_t e = 0; e < E; ++e) routed[e] = double(b.routed_per_expert[e]);
    comm.all_reduce(routed.data(), routed.data(), E, DType::f64, ReduceOp::sum);
    const double top = *std::max_element(routed.begin(), routed.end());
    if (top > m.max_per_expert) m.max_per_expert = top, m.mean_per_expert = double(s.shape.tokens * s.shape.top_k) / double(E);
    dropped += double(b.dropped), slots += double(b.slots);
  }
  m.dropped = sum_over_ranks(comm, dropped);
  m.slots = sum_over_ranks(comm, slots);
  m.capacity = model.routing().empty() ? 0 : model.routing().front().capacity;
}

void measure_all_to_all_bytes(Comm& comm, const ExpertsSettings& s, const moe::MoeModel& model, TraceMark mark,
                              ExpertsMeasurement& m) {
  if (!comm.trace()) return;
  Trace& tr = *comm.trace();
  const EventLog& log = tr.log(comm.global_rank(), kStreamComm);
  std::vector<double> seen;
  double counts_calls = 0;
  for (std::size_t i = mark.comm; i < log.size(); ++i) {
    const Event& e = log[i];
    if (e.kind != EventKind::collective) continue;
    const CollectiveKind k = tr.label_role(e.label).collective;
    if (k == CollectiveKind::all_to_allv) seen.push_back(double(e.bytes));
    if (k == CollectiveKind::all_to_all) counts_calls += 1;
  }
  const std::vector<double> want = expected_all_to_allv_bytes(s, model);
  double diff = seen.size() == want.size() ? 0 : INFINITY;
  for (std::size_t i = 0; i < std::min(seen.size(), want.size()); ++i) diff += std::fabs(seen[i] - want[i]);
  m.a2a_bytes_diff = max_over_ranks(comm, diff);
  m.a2a_calls = max_over_ranks(comm, double(seen.size()) + counts_calls);
  m.a2a_calls_expected = 5.0 * s.shape.layers;  // per block: counts, then 2 forward and 2 backward
  const double L = double(s.shape.layers), row = double(s.shape.hidden) * sizeof(float);
  double dispatch = 0, others = 0;
  for (std::size_t l = 0; l < model.routing().size() && 2 * l < seen.size(); ++l) {
    dispatch += seen[2 * l];
    others += seen[2 * l] - double(model.routing()[l].rows_to_rank[std::size_t(comm.rank())]) * row;
  }
  m.dispatch_bytes = sum_over_ranks(comm, dispatch) / (L * comm.size());
  m.to_others_bytes = sum_over_ranks(comm, others) / (L * comm.size());
}

void publish_routing(Comm& comm, const ExpertsSettings& s, const moe::MoeModel& model) {
  const int P = comm.size();
  nlohmann::json blocks = nlohmann::json::array();
  for (const moe::BlockRouting& b : model.routing()) {
    std::vector<std::int32_t> mine(b.choice.begin(), b.choice.end()), all(mine.size() * std::size_t(P));
    comm.all_gather(mine.data(), all.data(), mine.size(), DType::i32);
    std::vector<std::int64_t> rows(b.rows_to_rank.begin(), b.rows_to_rank.end()), matrix(std::size_t(P) * std::size_t(P));
    comm.all_gather(rows.data(), matrix.data(), rows.size(), DType::i64);
    std::vector<double> kept(b.kept_per_expert.begin(), b.kept_per_expert.end());
    comm.all_reduce(kept.data(), kept.data(), kept.size(), DType::f64, ReduceOp::sum);
    blocks.push_back({{"choice", all}, {"rows", matrix}, {"kept_per_expert", kept}});
  }
  if (!comm.trace() || comm.rank() != 0) return;
  const nlohmann::json meta = {{"experts", s.shape.experts},   {"ranks", P},
                               {"tokens", s.shape.tokens},     {"top_k", s.shape.top_k},
                               {"capacity", model.routing().empty() ? 0 : model.routing().front().capacity},
                               {"drop", s.shape.drop},         {"blocks", blocks}};
  comm.trace()->set_meta(MetaKey::moe_routing, meta.dump());
}

void StepSamples::add(Comm& comm, const moe::MoeModel& model, double step_seconds, int step, int steps) {
  const moe::StepSeconds& t = model.seconds();
  double busiest[2] = {t.experts, 0}, sums[2] = {t.all_to_all, t.experts};
  comm.all_reduce(busiest, busiest, 1, DType::f64, ReduceOp::max);
  comm.all_reduce(sums, sums, 2, DType::f64, ReduceOp::sum);
  const double slowest = max_over_ranks(comm, step_seconds);
  if (step == 0) {  // the rows each rank's experts computed, and the busier direction per block
    double rows = 0;
    for (const moe::BlockRouting& b : model.routing()) rows += double(b.rows_received);
    rows_max_ = max_over_ranks(comm, rows), rows_mean_ = sum_over_ranks(comm, rows) / comm.size();
    for (const moe::BlockRouting& b : model.routing()) {
      const double own = double(b.rows_to_rank[std::size_t(comm.rank())]);
      const double out = double(std::accumulate(b.rows_to_rank.begin(), b.rows_to_rank.end(), std::size_t(0))) - own;
      busier_rows_.push_back(max_over_ranks(comm, std::max(out, double(b.rows_received) - own)));
    }
  }
  if (step == 0 && steps > 1) return;  // a warm-up
  step_.push_back(slowest), a2a_.push_back(sums[0] / comm.size());
  expert_max_.push_back(busiest[0]), expert_mean_.push_back(sums[1] / comm.size());
}

void StepSamples::finish(Comm& comm, const LabConfig& cfg, const ExpertsSettings& s, ExpertsMeasurement& m) {
  m.step = repeated(step_);
  m.a2a_seconds = repeated(a2a_).median;
  m.expert_seconds_max = repeated(expert_max_).median;
  m.expert_seconds_mean = repeated(expert_mean_).median;
  m.rows_max = rows_max_, m.rows_mean = rows_mean_;
  if (!cfg.link.active()) return;
  // Per block on the emulated link: the counts' all_to_all, then four all_to_allv whose time
  // is (P−1)α + (the busier direction's bytes)/β (core/theory/collectives.h).
  const theory::Link link{cfg.link.alpha_s(), cfg.link.beta_Bps()};
  const int P = comm.size();
  const double row = double(s.shape.hidden) * sizeof(float), counts = double(s.shape.experts) * 8;
  for (double busier_rows : busier_rows_)
    m.predicted_a2a_seconds += theory::library_collective_time("all_to_all", P, counts, link) +
                               4 * theory::library_collective_time("all_to_allv", P, busier_rows * row, link);
}

}  // namespace dtl
