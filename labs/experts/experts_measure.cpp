// What the experts lab measures (experts_internal.h).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <numeric>

#include "core/error.h"
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

// The bytes each block's all-to-alls should move from this rank, from the router's choices
// and kept flags alone (not from the dispatch plan the layouts come from): a dispatch sends
// the rank's kept slots' rows; a combine sends back the rows its experts computed, the slots
// every rank kept for them. Forward and backward alike (backward runs the same two layouts).
struct ExpectedBytes {
  std::vector<double> dispatch, combine;  // per block
};
ExpectedBytes expected_bytes(Comm& comm, const ExpertsSettings& s, const moe::MoeModel& model) {
  const double row = double(s.shape.hidden) * sizeof(float);
  const int per_rank = s.shape.experts / comm.size();
  ExpectedBytes x;
  for (const moe::BlockRouting& b : model.routing()) {
    std::vector<double> kept(b.kept_per_expert.begin(), b.kept_per_expert.end());
    comm.all_reduce(kept.data(), kept.data(), kept.size(), DType::f64, ReduceOp::sum);
    double mine = 0;
    for (int e = comm.rank() * per_rank; e < (comm.rank() + 1) * per_rank; ++e) mine += kept[std::size_t(e)];
    x.dispatch.push_back(double(b.kept_slots) * row), x.combine.push_back(mine * row);
  }
  return x;
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
    if (top > m.max_per_expert)
      m.max_per_expert = top, m.mean_per_expert = double(s.shape.tokens * s.shape.top_k) / double(E);
    dropped += double(b.dropped), slots += double(b.slots);
  }
  m.dropped = sum_over_ranks(comm, dropped);
  m.slots = sum_over_ranks(comm, slots);
  m.capacity = model.routing().empty() ? 0 : model.routing().front().capacity;
}

void measure_all_to_all_bytes(Comm& comm, const ExpertsSettings& s, const moe::MoeModel& model, TraceMark mark,
                              ExpertsMeasurement& m) {
  if (!comm.trace())
    throw UsageError("the experts lab reads its all-to-alls' bytes from the trace: run it with tracing on");
  const ExpectedBytes want = expected_bytes(comm, s, model);
  Trace& tr = *comm.trace();
  const EventLog& log = tr.log(comm.global_rank(), kStreamComm);
  const double row = double(s.shape.hidden) * sizeof(float);
  double diff = 0, calls = 0, dispatch = 0, others = 0;
  for (std::size_t i = mark.comm; i < log.size(); ++i) {
    const Event& e = log[i];
    const Role role = tr.label_role(e.label);
    if (e.kind != EventKind::collective || role.exchange == ExpertExchange::none) continue;
    calls += 1;
    if (role.collective != CollectiveKind::all_to_allv) continue;  // the counts' all_to_all
    const std::size_t l = std::size_t(role.block);
    if (role.block < 0 || l >= want.dispatch.size()) {
      diff = INFINITY;  // not one of the lab's blocks
      continue;
    }
    const bool is_dispatch = role.exchange == ExpertExchange::dispatch;
    diff += std::fabs(double(e.bytes) - (is_dispatch ? want.dispatch[l] : want.combine[l]));
    if (is_dispatch && role.pass == Pass::forward) {
      dispatch += double(e.bytes);
      others += double(e.bytes) - double(model.routing()[l].rows_to_rank[std::size_t(comm.rank())]) * row;
    }
  }
  m.a2a_bytes_diff = max_over_ranks(comm, diff);
  m.a2a_calls = max_over_ranks(comm, calls);
  m.a2a_calls_expected = 5.0 * s.shape.layers;  // per block: counts, then 2 forward and 2 backward
  const double blocks = double(s.shape.layers) * comm.size();
  m.dispatch_bytes = sum_over_ranks(comm, dispatch) / blocks;
  m.to_others_bytes = sum_over_ranks(comm, others) / blocks;
}

bool RoutingLog::wants(const ExpertsSettings& s, int step) const {
  const double per_step = 2.0 * s.shape.tokens * s.shape.top_k * s.shape.layers;  // choice and routed
  return step < kMaxSteps && (double(steps_kept) + 1) * per_step <= kMaxSlots;
}

// One step's routing, every block: the ranks' choices gathered (rank 0's tokens first), the
// dispatch's rank × rank rows and the kept slots per expert; rank 0 adds it to the log and
// writes the whole log again (meta "moe_routing": {experts, ranks, ..., steps: [{step, blocks}]}).
void publish_routing(Comm& comm, const ExpertsSettings& s, const moe::MoeModel& model, int step, RoutingLog& log) {
  const int P = comm.size();
  const ScopedCollectiveRole role(Role{.part = RunPart::check});  // for the viewer, not the training
  nlohmann::json blocks = nlohmann::json::array();
  for (const moe::BlockRouting& b : model.routing()) {
    std::vector<std::int32_t> mine(b.choice.begin(), b.choice.end()), all(mine.size() * std::size_t(P));
    comm.all_gather(mine.data(), all.data(), mine.size(), DType::i32);
    std::vector<std::int32_t> mine_routed(b.routed.begin(), b.routed.end()), routed(all.size());
    comm.all_gather(mine_routed.data(), routed.data(), mine_routed.size(), DType::i32);
    std::vector<std::int64_t> rows(b.rows_to_rank.begin(), b.rows_to_rank.end()),
        matrix(std::size_t(P) * std::size_t(P));
    comm.all_gather(rows.data(), matrix.data(), rows.size(), DType::i64);
    std::vector<double> kept(b.kept_per_expert.begin(), b.kept_per_expert.end());
    comm.all_reduce(kept.data(), kept.data(), kept.size(), DType::f64, ReduceOp::sum);
    blocks.push_back({{"choice", all}, {"routed", routed}, {"rows", matrix}, {"kept_per_expert", kept}});
  }
  ++log.steps_kept;
  if (!comm.trace() || comm.rank() != 0) return;
  log.steps.push_back({{"step", step}, {"blocks", std::move(blocks)}});
  const nlohmann::json meta = {{"experts", s.shape.experts},
                               {"ranks", P},
                               {"tokens", s.shape.tokens},
                               {"top_k", s.shape.top_k},
                               {"capacity", model.routing().empty() ? 0 : model.routing().front().capacity},
                               {"drop", s.shape.drop},
                               {"steps", log.steps}};
  comm.trace()->set_meta(MetaKey::moe_routing, meta.dump());
}

void publish_routing_omitted(Comm& comm, const ExpertsSettings& s) {
  if (!comm.trace() || comm.rank() != 0) return;
  const double slots = 2.0 * s.shape.tokens * s.shape.top_k * s.shape.layers;
  char why[160];
  std::snprintf(why, sizeof why,
                "a step routes %.0f slots (T·k·L, twice: kept and routed), more than the %.0f a trace keeps", slots,
                RoutingLog::kMaxSlots);
  const nlohmann::json meta = {{"experts", s.shape.experts},       {"ranks", comm.size()}, {"tokens", s.shape.tokens},
                               {"top_k", s.shape.top_k},           {"capacity", 0},        {"drop", s.shape.drop},
                               {"steps", nlohmann::json::array()}, {"omitted", why}};
  comm.trace()->set_meta(MetaKey::moe_routing, meta.dump());
}

void StepSamples::add(Comm& comm, const moe::MoeModel& model, double step_seconds, int step, int steps) {
  const moe::StepSeconds& t = model.seconds();
  double busiest = t.experts_cpu, least_a2a = t.all_to_all, sums[3] = {t.all_to_all, t.experts, t.experts_cpu};
  comm.all_reduce(&busiest, &busiest, 1, DType::f64, ReduceOp::max);
  comm.all_reduce(&least_a2a, &least_a2a, 1, DType::f64, ReduceOp::min);
  comm.all_reduce(sums, sums, 3, DType::f64, ReduceOp::sum);
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
  step_.push_back(slowest), a2a_.push_back(sums[0] / comm.size()), a2a_min_.push_back(least_a2a);
  expert_max_.push_back(busiest), expert_mean_.push_back(sums[2] / comm.size()),
      expert_wall_.push_back(sums[1] / comm.size());
}

void StepSamples::finish(Comm& comm, const LabConfig& cfg, const ExpertsSettings& s, ExpertsMeasurement& m) {
  m.step = repeated(step_);
  m.a2a_seconds = repeated(a2a_).median;
  m.a2a_seconds_min = repeated(a2a_min_).median;
  m.expert_seconds_max = repeated(expert_max_).median;
  m.expert_seconds_mean = repeated(expert_mean_).median;
  m.expert_wall_seconds = repeated(expert_wall_).median;
  m.rows_max = rows_max_, m.rows_mean = rows_mean_;
  if (!cfg.link.active()) return;
  // Per block on the emulated link: the counts' all_to_all, then four all_to_allv whose time
  // is (P−1)α + (the busier direction's bytes)/β (core/theory/collectives.h).
  const theory::Link link{cfg.link.alpha_s(), cfg.link.beta_Bps()};
  const int P = comm.size();
  const double row = double(s.shape.hidden) * sizeof(float), counts = double(s.shape.experts) * 8;
  for (double busier_rows : busier_rows_)
    m.predicted_a2a_seconds +=
        theory::library_collective_time(CollectiveKind::all_to_all, P, counts, link) +
        4 * theory::library_collective_time(CollectiveKind::all_to_allv, P, busier_rows * row, link);
}

}  // namespace dtl
