// One routing group's pass through an MoE block (moe_internal.h): dispatch, the experts,
// combine, and backward through the same exchanges in reverse.
//
//   forward    counts: all_to_all of E/EP numbers per rank (how many rows of each of the
//              receiver's experts follow), then rows: all_to_allv of the kept slots' inputs,
//              the experts, and the reverse all_to_allv of their outputs
//   backward   all_to_allv of dL/d(expert output) to the experts (the dispatch's layout),
//              the experts' backward, the reverse all_to_allv of dL/d(expert input)
#include <time.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "core/trace/run_clock.h"
#include "core/trace/trace.h"
#include "labs/experts/moe_internal.h"

namespace dtl::moe {

namespace {

using Clock = RunClock;  // a stepped run leaves out the learner's pauses
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// CPU seconds this thread has run (CLOCK_THREAD_CPUTIME_ID): a rank's own work, however long
// it waited for a core.
double thread_cpu_seconds() {
  timespec t{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) != 0) return 0;
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

// Row i of `to` is row perm[i] of `from` (or the reverse: row perm[i] of `to` is row i).
void permute_rows(const std::vector<float>& from, std::vector<float>& to, const std::vector<std::size_t>& perm,
                  std::size_t h, bool inverse) {
  for (std::size_t i = 0; i < perm.size(); ++i) {
    const float* src = from.data() + (inverse ? i : perm[i]) * h;
    std::copy(src, src + h, to.data() + (inverse ? perm[i] : i) * h);
  }
}

std::vector<float> rows_buffer(std::size_t rows, std::size_t h) {
  return std::vector<float>(std::max<std::size_t>(1, rows * h));
}

// What a collective of the block is for, on the trace, the step-through and the viewer.
Role exchange_role(ExpertExchange x, Pass pass, int layer) {
  return Role{.pass = pass, .block = std::int16_t(layer), .exchange = x};
}

// A compute span on the rank's timeline: "router", "experts", "combine", with the block.
std::uint16_t span_label(Comm& comm, const char* name, Pass pass, int layer) {
  return comm.trace() ? comm.trace()->label(name, Role{.pass = pass, .block = std::int16_t(layer)}) : 0;
}

}  // namespace

void MoeModel::Impl::exchange_counts(int layer, GroupCache& c) {
  const std::size_t L = std::size_t(local_experts), h = std::size_t(s.hidden);
  std::vector<std::int64_t> send(std::size_t(s.experts)), recv(std::size_t(s.experts));
  for (std::size_t e = 0; e < send.size(); ++e) send[e] = std::int64_t(c.dispatch.tokens_per_expert[e]);
  {
    const ScopedCollectiveRole role(exchange_role(ExpertExchange::counts, Pass::forward, layer));
    ep.all_to_all(send.data(), recv.data(), L, DType::i64);  // recv[q·L + j]: rows from q for my expert j
  }
  std::vector<std::size_t> from_rank(std::size_t(P), 0), block_start(std::size_t(P), 0);
  for (std::size_t q = 0; q < std::size_t(P); ++q) {
    for (std::size_t j = 0; j < L; ++j) from_rank[q] += std::size_t(recv[q * L + j]);
    if (q > 0) block_start[q] = block_start[q - 1] + from_rank[q - 1];
  }
  c.rows = dispatch_layout(c.dispatch, from_rank, s.hidden);
  if (c.rows.send_extent() > c.dispatch.send_order.size() * h)  // the learner's plan, before any byte moves
    throw Error("plan_dispatch's counts and first rows reach past its " + std::to_string(c.dispatch.send_order.size()) +
                " kept slots: each rank's block must start where the one before it ends");
  c.batch_rows.assign(L, 0);
  c.perm.clear();
  for (std::size_t j = 0; j < L; ++j)
    for (std::size_t q = 0; q < std::size_t(P); ++q) {
      std::size_t at = block_start[q];  // my expert j's rows from q follow my experts before j
      for (std::size_t jj = 0; jj < j; ++jj) at += std::size_t(recv[q * L + jj]);
      for (std::int64_t i = 0; i < recv[q * L + j]; ++i) c.perm.push_back(at + std::size_t(i));
      c.batch_rows[j] += std::size_t(recv[q * L + j]);
    }
}

void MoeModel::Impl::forward_group(int layer, GroupCache& c, int tokens, float* out) {
  const std::size_t h = std::size_t(s.hidden), f = std::size_t(s.ffn);
  auto t0 = Clock::now();
  std::vector<float> send;
  {
    const ScopedSpan span(ep.trace(), ep.global_rank(), EventKind::compute,
                          span_label(ep, "router", Pass::forward, layer));
    route(layer, c, tokens);
    send = rows_buffer(c.dispatch.send_order.size(), h);
    gather_rows(c.x.data(), s.hidden, c.dispatch, s.top_k, send.data());
  }
  secs.router += since(t0), t0 = Clock::now();
  exchange_counts(layer, c);
  const std::size_t R = c.perm.size();
  std::vector<float> recv = rows_buffer(R, h);
  {
    const ScopedCollectiveRole role(exchange_role(ExpertExchange::dispatch, Pass::forward, layer));
    ep.all_to_allv(send.data(), recv.data(), c.rows, DType::f32);
  }
  secs.all_to_all += since(t0), t0 = Clock::now();
  std::vector<float> y = rows_buffer(R, h), y_recv = rows_buffer(R, h);
  const double cpu0 = thread_cpu_seconds();
  {
    const ScopedSpan span(ep.trace(), ep.global_rank(), EventKind::compute,
                          span_label(ep, "experts", Pass::forward, layer));
    c.in = rows_buffer(R, h), c.pre = rows_buffer(R, f), c.act = rows_buffer(R, f);
    permute_rows(recv, c.in, c.perm, h, false);
    for (std::size_t j = 0, o = 0; j < c.batch_rows.size(); o += c.batch_rows[j], ++j)
      expert_forward(layer, int(j), c, o, c.batch_rows[j], y.data());
    permute_rows(y, y_recv, c.perm, h, true);
  }
  secs.experts_cpu += thread_cpu_seconds() - cpu0;
  secs.experts += since(t0), t0 = Clock::now();
  c.back = rows_buffer(c.dispatch.send_order.size(), h);
  {
    const ScopedCollectiveRole role(exchange_role(ExpertExchange::combine, Pass::forward, layer));
    ep.all_to_allv(y_recv.data(), c.back.data(), reversed(c.rows), DType::f32);
  }
  secs.all_to_all += since(t0), t0 = Clock::now();
  const ScopedSpan span(ep.trace(), ep.global_rank(), EventKind::compute,
                        span_label(ep, "combine", Pass::forward, layer));
  combine_rows(c.back.data(), s.hidden, c.dispatch, c.routing, out);
  secs.router += since(t0);
}

void MoeModel::Impl::backward_group(int layer, GroupCache& c, const float* dout, float* dx) {
  const std::size_t h = std::size_t(s.hidden), S = c.dispatch.send_order.size(), R = c.perm.size();
  auto t0 = Clock::now();
  std::vector<float> d_back = rows_buffer(S, h), d_weight(c.routing.expert.size(), 0.0f);
  combine_backward(c.back.data(), dout, s.hidden, c.dispatch, c.routing, d_back.data(), d_weight.data());
  secs.router += since(t0), t0 = Clock::now();
  std::vector<float> d_recv = rows_buffer(R, h);
  {  // the gradients of the experts' outputs travel the dispatch's way
    const ScopedCollectiveRole role(exchange_role(ExpertExchange::dispatch, Pass::backward, layer));
    ep.all_to_allv(d_back.data(), d_recv.data(), c.rows, DType::f32);
  }
  secs.all_to_all += since(t0), t0 = Clock::now();
  std::vector<float> dx_recv = rows_buffer(R, h);
  const double cpu0 = thread_cpu_seconds();
  {
    const ScopedSpan span(ep.trace(), ep.global_rank(), EventKind::compute,
                          span_label(ep, "experts", Pass::backward, layer));
    std::vector<float> d_batch = rows_buffer(R, h), dx_batch = rows_buffer(R, h);
    permute_rows(d_recv, d_batch, c.perm, h, false);
    for (std::size_t j = 0, o = 0; j < c.batch_rows.size(); o += c.batch_rows[j], ++j)
      expert_backward(layer, int(j), c, o, c.batch_rows[j], d_batch.data(), dx_batch.data());
    permute_rows(dx_batch, dx_recv, c.perm, h, true);
  }
  secs.experts_cpu += thread_cpu_seconds() - cpu0;
  secs.experts += since(t0), t0 = Clock::now();
  std::vector<float> d_send = rows_buffer(S, h);
  {  // and those of their inputs the combine's
    const ScopedCollectiveRole role(exchange_role(ExpertExchange::combine, Pass::backward, layer));
    ep.all_to_allv(dx_recv.data(), d_send.data(), reversed(c.rows), DType::f32);
  }
  secs.all_to_all += since(t0), t0 = Clock::now();
  const ScopedSpan span(ep.trace(), ep.global_rank(), EventKind::compute,
                        span_label(ep, "router", Pass::backward, layer));
  gather_rows_backward(d_send.data(), s.hidden, c.dispatch, s.top_k, dx);
  router_backward(layer, c, d_weight, dx);
  secs.router += since(t0);
}

// Every rank routed its own tokens with the same router: its gradient is the sum over ranks
// (data parallelism over the tokens). The experts' gradients are whole where they live.
void MoeModel::Impl::reduce_router_grads() {
  for (int l = 0; l < s.layers; ++l) {
    Param& r = router(l);
    ep.all_reduce(r.g.data(), r.g.data(), r.g.size(), DType::f32, ReduceOp::sum);
  }
}

CollectiveWords moe_wait_words() {
  return [](const Role& r) -> std::string {
    if (r.block < 0) return {};
    const std::string block = " block " + std::to_string(r.block);
    const bool back = r.pass == Pass::backward;
    switch (r.exchange) {
      case ExpertExchange::counts: return "for the counts of" + block + "'s dispatch, rows per expert";
      case ExpertExchange::dispatch:
        return back ? "for the backward dispatch of" + block + ", the gradients of the experts' outputs"
                    : "for the dispatch of" + block + ", the tokens' rows to their experts";
      case ExpertExchange::combine:
        return back ? "for the backward combine of" + block + ", the gradients of the tokens' rows"
                    : "for the combine of" + block + ", the experts' outputs back to their tokens";
      case ExpertExchange::none: return {};
    }
    return {};
  };
}

}  // namespace dtl::moe
