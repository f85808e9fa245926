#include "labs/measure.h"

#include "core/error.h"
#include "core/trace/trace.h"

namespace dtl {

std::size_t traffic_mark(Comm& comm) {
  Trace* tr = comm.trace();
  if (!tr) throw Error("measuring traffic needs tracing on (the lab runner always enables it)");
  return tr->log(comm.global_rank(), kStreamMain).size();
}

Traffic traffic_since(Comm& comm, std::size_t mark) {
  Trace* tr = comm.trace();
  if (!tr) throw Error("measuring traffic needs tracing on (the lab runner always enables it)");
  const EventLog& log = tr->log(comm.global_rank(), kStreamMain);
  Traffic t;
  std::set<int> tags;
  for (std::size_t i = mark; i < log.size(); ++i) {
    const Event& e = log[i];
    if (e.kind != EventKind::send && e.kind != EventKind::recv) continue;
    tags.insert(e.tag);
    if (e.kind == EventKind::send) {
      t.bytes_sent += double(e.bytes);
      t.messages_sent += 1;
      t.sent_to.insert(e.peer);
    }
  }
  t.steps = double(tags.size());
  return t;
}

Traffic traffic_max(Comm& comm, const Traffic& mine) {
  double v[3] = {mine.bytes_sent, mine.messages_sent, mine.steps};
  comm.all_reduce(v, v, 3, DType::f64, ReduceOp::max);
  Traffic t = mine;
  t.bytes_sent = v[0];
  t.messages_sent = v[1];
  t.steps = v[2];
  return t;
}

double max_over_ranks(Comm& comm, double v) {
  comm.all_reduce(&v, &v, 1, DType::f64, ReduceOp::max);
  return v;
}

std::vector<double> run_means(const std::vector<double>& per_step, int steps) {
  std::vector<double> means;
  if (steps < 1) return means;
  for (std::size_t begin = 0; begin + std::size_t(steps) <= per_step.size(); begin += std::size_t(steps)) {
    double sum = 0;
    for (std::size_t i = begin; i < begin + std::size_t(steps); ++i) sum += per_step[i];
    means.push_back(sum / steps);
  }
  return means;
}

}  // namespace dtl
