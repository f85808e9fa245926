// The DDP lab's timings: each rank's per-step figures combined over ranks, then over the
// timed runs (see ddp_lab.h). Why medians of runs: on thread ranks sharing a few cores a
// single step can be stretched by milliseconds when the scheduler runs something else,
// which a mean over all steps would carry into the report; the median of 5 runs does not.
#include <algorithm>

#include "labs/ddp/ddp_lab.h"
#include "labs/measure.h"

namespace dtl {

namespace {

// Element-wise over ranks.
std::vector<double> over_ranks(Comm& comm, std::vector<double> v, ReduceOp op) {
  comm.all_reduce(v.data(), v.data(), v.size(), DType::f64, op);
  return v;
}

std::vector<double> field(const std::vector<StepTiming>& timed, double StepTiming::*f) {
  std::vector<double> v;
  for (const StepTiming& t : timed) v.push_back(t.*f);
  return v;
}

}  // namespace

DdpTimings combine_timings(Comm& comm, const std::vector<StepTiming>& timed, int steps) {
  const std::vector<double> compute = over_ranks(comm, field(timed, &StepTiming::compute), ReduceOp::max);
  const std::vector<double> step = over_ranks(comm, field(timed, &StepTiming::step), ReduceOp::max);
  const std::vector<double> comm_time = over_ranks(comm, field(timed, &StepTiming::comm), ReduceOp::max);
  const std::vector<double> least = over_ranks(comm, field(timed, &StepTiming::wait), ReduceOp::min);
  const std::vector<double> most = over_ranks(comm, field(timed, &StepTiming::wait), ReduceOp::max);
  std::vector<double> imbalance(least.size());
  for (std::size_t i = 0; i < least.size(); ++i) imbalance[i] = most[i] - least[i];

  DdpTimings t;
  const std::vector<double> compute_runs = run_means(compute, steps), exposed_runs = run_means(least, steps);
  std::vector<double> efficiency;
  for (std::size_t r = 0; r < compute_runs.size(); ++r)
    efficiency.push_back(compute_runs[r] + exposed_runs[r] > 0 ? compute_runs[r] / (compute_runs[r] + exposed_runs[r])
                                                               : 1);
  t.compute = repeated(compute_runs);
  t.comm = repeated(run_means(comm_time, steps));
  t.exposed = repeated(exposed_runs);
  t.imbalance = repeated(run_means(imbalance, steps));
  t.step = repeated(run_means(step, steps));
  t.efficiency = repeated(efficiency);
  return t;
}

}  // namespace dtl
