#include "labs/measure.h"

#include <algorithm>

#include "core/error.h"
#include "core/memory/device_ops.h"
#include "core/trace/trace.h"
#include "labs/report_format.h"

namespace dtl {

std::size_t traffic_mark(Comm& comm) {
  Trace* tr = comm.trace();
  if (!tr) throw Error("measuring traffic needs tracing on (the lab runner always enables it)");
  return tr->log(comm.global_rank(), kStreamMain).size();
}

Traffic traffic_since(Comm& comm, std::size_t mark, const NodeLayout& nodes) {
  Trace* tr = comm.trace();
  if (!tr) throw Error("measuring traffic needs tracing on (the lab runner always enables it)");
  const EventLog& log = tr->log(comm.global_rank(), kStreamMain);
  Traffic t;
  std::set<std::pair<int, bool>> tags;  // (tag, between nodes)
  const int me = comm.global_rank();
  for (std::size_t i = mark; i < log.size(); ++i) {
    const Event& e = log[i];
    if (e.kind != EventKind::send && e.kind != EventKind::recv) continue;
    tags.insert({e.tag, nodes.node_of(e.peer) != nodes.node_of(me)});
    if (e.kind == EventKind::send) {
      t.bytes_sent += double(e.bytes);
      t.messages_sent += 1;
      t.sent_to.insert(e.peer);
    }
  }
  t.steps = double(tags.size());
  return t;
}

double peak_bytes_since(Comm& comm, std::size_t mark, MemTag tag) {
  Trace* tr = comm.trace();
  if (!tr) throw Error("measuring memory needs tracing on (the lab runner always enables it)");
  const EventLog& log = tr->log(comm.global_rank(), kStreamMain);
  MemoryByTag memory;
  for (std::size_t i = mark; i < log.size(); ++i) memory.apply(log[i]);
  return double(memory.peak[int(tag)]);
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

void broadcast_tensors(Comm& comm, std::vector<std::vector<float>>& tensors, int root) {
  std::int64_t count = std::int64_t(tensors.size());
  comm.broadcast(&count, 1, DType::i64, root);
  std::vector<std::int64_t> sizes(static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < tensors.size(); ++i) sizes[i] = std::int64_t(tensors[i].size());
  comm.broadcast(sizes.data(), sizes.size(), DType::i64, root);
  std::vector<float> flat;
  for (const std::vector<float>& t : tensors) flat.insert(flat.end(), t.begin(), t.end());
  std::size_t total = 0;
  for (std::int64_t n : sizes) total += std::size_t(n);
  flat.resize(total);
  comm.broadcast(flat.data(), total, DType::f32, root);
  tensors.resize(std::size_t(count));
  std::size_t at = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    tensors[i].assign(flat.begin() + std::ptrdiff_t(at), flat.begin() + std::ptrdiff_t(at + std::size_t(sizes[i])));
    at += std::size_t(sizes[i]);
  }
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

double device_vs_tracker_bytes(Comm& comm, const MemoryTracker& mem, Device device, double cached) {
  const double held = double(device_ops(device).bytes_allocated_by_this_thread());
  return max_over_ranks(comm, std::fabs(held - double(mem.current_total()) - cached));
}

void add_device_memory_check(Report& rep, const std::string& prefix, double difference) {
  rep.check(prefix + "device_vs_tracker_bytes", "device allocator - tracker (max over ranks)", difference, 0.0, "B")
      .from("the device's own count");
}

double sixteen_bit_gradient_bound(DType precision, int ranks) {
  const double u = std::ldexp(1.0, precision == DType::f16 ? -11 : -8);
  return std::max(4.0, double(ranks) + 2.0) * u;
}

std::string sixteen_bit_gradient_formula(DType precision) {
  return precision == DType::f16 ? "(N+2)·2^-11" : "(N+2)·2^-8";
}

void add_model_state_rows(Report& rep, const std::string& prefix, const std::string& whose, DType precision,
                          const ModelStateBytes& m) {
  const double esize = double(dtype_size(precision));  // 4, or 2 in mixed precision
  const std::string e = format_number(esize) + " B/param";
  rep.check(prefix + "param_bytes", "param bytes" + whose, m.param_bytes, esize * m.params, "B").from(e);
  rep.check(prefix + "grad_bytes", "grad bytes" + whose, m.grad_bytes, esize * m.params, "B").from(e);
  rep.check(prefix + "optimizer_bytes", "optimizer bytes" + whose, m.optimizer_bytes, (16 - 2 * esize) * m.params, "B")
      .from(precision == DType::f32 ? "8 B/param: m, v" : "12 B/param: master, m, v");
  rep.add(prefix + "model_state_bytes_per_param", "model state bytes per parameter",
          (m.param_bytes + m.grad_bytes + m.optimizer_bytes) / m.params, "B/param")
      .predict(16.0, precision == DType::f32 ? "4+4+8 (W, G, m+v)" : "2+2+12 (W, G, fp32 W+m+v)");
}

void publish_memory_formula(Comm& comm, double params, double activation_bytes, const std::string& words,
                            const Role* phase) {
  Trace* tr = comm.trace();
  if (!tr) return;
  const std::string rank = std::to_string(comm.global_rank());
  tr->set_meta(meta_key_name(MetaKey::predicted_bytes_of_rank, phase ? role_key(*phase) + "." + rank : rank),
               std::to_string(16.0 * params + activation_bytes));
  if (comm.global_rank() == 0) tr->set_meta(MetaKey::predicted_bytes_formula, words);
}

}  // namespace dtl
