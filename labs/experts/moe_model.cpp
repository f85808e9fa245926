// The experts lab's model (moe_model.h): routing and the experts' math, one routing group
// at a time; the exchanges between ranks are in moe_exchange.cpp.
#include "labs/experts/moe_model.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/error.h"
#include "core/trace/run_clock.h"
#include "labs/experts/moe_internal.h"
#include "labs/train/splitmix.h"

namespace dtl::moe {

namespace {

// A counter-based draw, uniform with mean 0 and standard deviation `stddev`: element i of
// stream `stream` is the same on every rank and for every EP size.
float draw(unsigned seed, std::uint64_t stream, std::uint64_t i, float stddev) {
  const std::uint64_t z = splitmix64((std::uint64_t(seed) << 40) ^ (stream << 32) ^ i);
  const double u = double(z >> 11) * 0x1.0p-53;  // [0, 1)
  return float((2 * u - 1) * std::sqrt(3.0) * stddev);
}

Param make_param(const MoeShape& s, std::string name, int index, std::size_t n, float stddev) {
  Param p{std::move(name),         index, std::vector<float>(n), std::vector<float>(n, 0), std::vector<float>(n, 0),
          std::vector<float>(n, 0)};
  for (std::size_t i = 0; i < n; ++i) p.w[i] = draw(s.seed, std::uint64_t(index) + 16, i, stddev);
  return p;
}

}  // namespace

int MoeModel::param_count(const MoeShape& s) { return s.layers * (1 + 4 * s.experts); }

MoeModel::Impl::Impl(const MoeShape& shape, Comm& group, int groups_per_rank)
    : s(shape),
      ep(group),
      groups(groups_per_rank),
      P(group.size()),
      me(group.rank()),
      local_experts(shape.experts / group.size()) {
  if (shape.experts % P != 0 || shape.tokens % (P * groups) != 0)
    throw UsageError("the experts lab needs --experts and --tokens divisible by the expert-parallel ranks");
  const std::size_t h = std::size_t(s.hidden), f = std::size_t(s.ffn);
  const float w1_std = 1.0f / std::sqrt(float(s.hidden)), w2_std = 0.5f / std::sqrt(float(s.ffn));
  for (int l = 0; l < s.layers; ++l) {
    const int base = l * (1 + 4 * s.experts);
    params.push_back(make_param(s, "block " + std::to_string(l) + " router", base, std::size_t(s.experts) * h, w1_std));
    for (int j = 0; j < local_experts; ++j) {
      const int e = me * local_experts + j, at = base + 1 + 4 * e;
      const std::string name = "block " + std::to_string(l) + " expert " + std::to_string(e);
      params.push_back(make_param(s, name + " w1", at, f * h, w1_std));
      params.push_back(make_param(s, name + " b1", at + 1, f, 0.02f));
      params.push_back(make_param(s, name + " w2", at + 2, h * f, w2_std));
      params.push_back(make_param(s, name + " b2", at + 3, h, 0.02f));
    }
  }
  const std::size_t rows = std::size_t(s.tokens / P), first = std::size_t(me) * rows;
  x0.resize(rows * h), target.resize(rows * h);
  for (std::size_t i = 0; i < rows * h; ++i) {
    x0[i] = draw(s.seed, 1, first * h + i, 1.0f);
    target[i] = draw(s.seed, 2, first * h + i, 1.0f);
  }
  cache.assign(std::size_t(s.layers), std::vector<GroupCache>(std::size_t(groups)));
  routing.assign(std::size_t(s.layers), {});
}

// The router's logits, the learner's top-k and capacity, and the dispatch plan.
void MoeModel::Impl::route(int layer, GroupCache& c, int tokens) {
  const int E = s.experts;
  std::vector<float> logits(std::size_t(tokens) * std::size_t(E));
  if (tokens > 0)
    kernels::linear_forward(c.x.data(), router(layer).w.data(), nullptr, logits.data(), tokens, s.hidden, E);
  if (s.router_skew != 0 && E > 1)
    for (std::size_t t = 0; t < std::size_t(tokens); ++t)
      for (int e = 0; e < E; ++e)
        logits[t * std::size_t(E) + std::size_t(e)] += float(s.router_skew * (E - 1 - e) / (E - 1));
  c.routing = route_top_k(logits.data(), tokens, E, s.top_k);
  const int capacity = s.drop ? expert_capacity(tokens, E, s.top_k, s.capacity_factor) : std::max(1, tokens * s.top_k);
  c.kept = kept_slots(c.routing, capacity);
  c.dispatch = plan_dispatch(c.routing, c.kept, P);
  check_exercise_outputs(c, tokens);
  routing[std::size_t(layer)].capacity = capacity;
}

// The exercises' results (the learner's code) are sized and in range before anything indexes
// with them: a mistake stops the run with the exercise's name instead of reading past a buffer.
void MoeModel::Impl::check_exercise_outputs(const GroupCache& c, int tokens) const {
  const Routing& r = c.routing;
  const std::size_t slots = std::size_t(tokens) * std::size_t(s.top_k), E = std::size_t(s.experts);
  const bool experts_ok =
      std::all_of(r.expert.begin(), r.expert.end(), [&](int e) { return e >= 0 && std::size_t(e) < E; });
  if (r.expert.size() != slots || r.weight.size() != slots || r.probs.size() != std::size_t(tokens) * E || !experts_ok)
    throw Error(
        "route_top_k (exercise top_k_router) must fill expert and weight with tokens·k entries, experts in 0.." +
        std::to_string(E - 1) + ", and probs with tokens·experts");
  if (c.kept.size() != slots) throw Error("kept_slots (exercise top_k_router) must return one flag per routed slot");
  const Dispatch& d = c.dispatch;
  const bool order_ok =
      std::all_of(d.send_order.begin(), d.send_order.end(), [&](int x) { return x >= 0 && std::size_t(x) < slots; });
  if (d.send_order.size() + d.dropped != slots || d.tokens_to_rank.size() != std::size_t(P) ||
      d.tokens_per_expert.size() != E || !order_ok)
    throw Error(
        "plan_dispatch (exercise dispatch_layout) returned a plan that does not account for every routed slot once, "
        "with a count per rank and per expert");
}

// One expert's forward on its batch rows [o, o + n): H = X·W1ᵀ + b1, A = GELU(H), Y = A·W2ᵀ + b2.
void MoeModel::Impl::expert_forward(int layer, int j, GroupCache& c, std::size_t o, std::size_t n, float* y) {
  if (n == 0) return;
  const std::size_t h = std::size_t(s.hidden), f = std::size_t(s.ffn);
  kernels::linear_forward(c.in.data() + o * h, expert(layer, j, 0).w.data(), expert(layer, j, 1).w.data(),
                          c.pre.data() + o * f, int(n), s.hidden, s.ffn);
  kernels::gelu_forward(c.pre.data() + o * f, c.act.data() + o * f, n * f);
  kernels::linear_forward(c.act.data() + o * f, expert(layer, j, 2).w.data(), expert(layer, j, 3).w.data(), y + o * h,
                          int(n), s.ffn, s.hidden);
}

// Its backward: dY rows in, the input gradient rows out; weight gradients accumulate.
void MoeModel::Impl::expert_backward(int layer, int j, GroupCache& c, std::size_t o, std::size_t n, const float* dy,
                                     float* dx) {
  if (n == 0) return;
  const std::size_t h = std::size_t(s.hidden), f = std::size_t(s.ffn);
  std::vector<float> d_act(n * f), d_pre(n * f);
  kernels::linear_backward(c.act.data() + o * f, expert(layer, j, 2).w.data(), dy + o * h, d_act.data(),
                           expert(layer, j, 2).g.data(), expert(layer, j, 3).g.data(), int(n), s.ffn, s.hidden, true);
  kernels::gelu_backward(c.pre.data() + o * f, d_act.data(), d_pre.data(), n * f);
  kernels::linear_backward(c.in.data() + o * h, expert(layer, j, 0).w.data(), d_pre.data(), dx + o * h,
                           expert(layer, j, 0).g.data(), expert(layer, j, 1).g.data(), int(n), s.hidden, s.ffn, true);
}

// The router's backward: dL/dweight of the kept slots and α/G · dL_aux/dprobs through the
// softmax, then through logits = x·Wrᵀ (the skew is a constant).
void MoeModel::Impl::router_backward(int layer, GroupCache& c, const std::vector<float>& d_weight, float* dx) {
  const Routing& r = c.routing;
  const std::size_t E = std::size_t(s.experts), h = std::size_t(s.hidden);
  std::vector<float> d_probs(std::size_t(r.tokens) * E, 0), d_logits(d_probs.size());
  for (std::size_t slot = 0; slot < r.expert.size(); ++slot)
    if (c.kept[slot]) d_probs[(slot / std::size_t(s.top_k)) * E + std::size_t(r.expert[slot])] += d_weight[slot];
  load_balancing_grad(r, double(s.aux_weight) / double(groups * P), d_probs.data());
  softmax_backward(r, d_probs.data(), d_logits.data());
  if (r.tokens == 0) return;
  std::vector<float> dx_router(std::size_t(r.tokens) * h);
  kernels::linear_backward(c.x.data(), router(layer).w.data(), d_logits.data(), dx_router.data(),
                           router(layer).g.data(), nullptr, r.tokens, s.hidden, s.experts, true);
  kernels::axpy(1.0f, dx_router.data(), dx, dx_router.size());
}

// What the block's routing did, for the report and the viewer.
void MoeModel::Impl::record_routing(int layer, const GroupCache& c, BlockRouting& b) {
  const Routing& r = c.routing;
  b.routed_per_expert.resize(std::size_t(s.experts), 0);
  b.kept_per_expert.resize(std::size_t(s.experts), 0);
  b.rows_to_rank.resize(std::size_t(P), 0);
  for (int e : r.expert) ++b.routed_per_expert[std::size_t(e)];
  // Counted from the router's own choices and flags, not from the dispatch plan: the bytes
  // check compares the all-to-alls with these.
  for (std::size_t slot = 0; slot < r.expert.size(); ++slot)
    if (c.kept[slot]) ++b.kept_per_expert[std::size_t(r.expert[slot])], ++b.kept_slots;
  for (std::size_t q = 0; q < std::size_t(P); ++q) b.rows_to_rank[q] += c.dispatch.tokens_to_rank[q];
  for (std::size_t slot = 0; slot < r.expert.size(); ++slot) b.choice.push_back(c.kept[slot] ? r.expert[slot] : -1);
  b.routed.insert(b.routed.end(), r.expert.begin(), r.expert.end());
  b.rows_received += c.perm.size();
  b.dropped += c.dispatch.dropped;
  b.slots += r.expert.size();
  b.aux_loss += load_balancing_loss(r) / groups;
  (void)layer;
}

void MoeModel::Impl::begin_step() {
  secs = {};
  for (Param& p : params) std::fill(p.g.begin(), p.g.end(), 0.0f);
}

// out += MoE(x) over this rank's rows, one routing group after the other.
void MoeModel::Impl::forward_block(int layer, const float* x, float* out) {
  const std::size_t h = std::size_t(s.hidden), per_group = rows() / std::size_t(groups);
  routing[std::size_t(layer)] = {};
  for (int g = 0; g < groups; ++g) {
    GroupCache& c = cache[std::size_t(layer)][std::size_t(g)];
    const std::size_t at = std::size_t(g) * per_group * h;
    c.x.assign(x + at, x + at + per_group * h);
    forward_group(layer, c, int(per_group), out + at);
    record_routing(layer, c, routing[std::size_t(layer)]);
  }
}

// dx += dL/dx through the MoE (its experts' and its router's share).
void MoeModel::Impl::backward_block(int layer, const float* dout, float* dx) {
  const std::size_t at_group = rows() / std::size_t(groups) * std::size_t(s.hidden);
  for (int g = 0; g < groups; ++g)
    backward_group(layer, cache[std::size_t(layer)][std::size_t(g)], dout + std::size_t(g) * at_group,
                   dx + std::size_t(g) * at_group);
}

double MoeModel::Impl::aux_term() const {
  double sum = 0;
  for (const BlockRouting& b : routing) sum += b.aux_loss / P;
  return sum;
}

float MoeModel::Impl::train_step() {
  begin_step();
  const std::size_t h = std::size_t(s.hidden);
  std::vector<std::vector<float>> acts(std::size_t(s.layers) + 1);
  acts[0] = x0;
  for (int l = 0; l < s.layers; ++l) {
    acts[std::size_t(l) + 1] = acts[std::size_t(l)];  // the residual; the block adds its experts' sum
    forward_block(l, acts[std::size_t(l)].data(), acts[std::size_t(l) + 1].data());
  }
  // Mean squared error over the whole batch's T·h outputs: each rank sums its rows.
  const std::vector<float>& y = acts.back();
  const double n = double(s.tokens) * double(h);
  std::vector<float> grad(y.size());
  double sums[2] = {0, aux_term()};
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double d = double(y[i]) - double(target[i]);
    sums[0] += d * d;
    grad[i] = float(2 * d / n);
  }
  for (int l = s.layers - 1; l >= 0; --l) {
    std::vector<float> dx = grad;  // the residual passes the gradient through
    backward_block(l, grad.data(), dx.data());
    grad.swap(dx);
  }
  reduce_router_grads();
  ep.all_reduce(sums, sums, 2, DType::f64, ReduceOp::sum);
  aux = float(sums[1] / s.layers);
  return float(sums[0] / n + double(s.aux_weight) * sums[1]);
}

MoeModel::MoeModel(const MoeShape& shape, Comm& ep, int groups_per_rank)
    : impl_(std::make_unique<Impl>(shape, ep, groups_per_rank)) {}
MoeModel::~MoeModel() = default;
float MoeModel::train_step() { return impl_->train_step(); }
void MoeModel::begin_step() { impl_->begin_step(); }
void MoeModel::forward_block(int layer, const float* x, float* out) { impl_->forward_block(layer, x, out); }
void MoeModel::backward_block(int layer, const float* dout, float* dx) { impl_->backward_block(layer, dout, dx); }
double MoeModel::end_step() {
  impl_->reduce_router_grads();
  double sum = impl_->aux_term();
  impl_->ep.all_reduce(&sum, &sum, 1, DType::f64, ReduceOp::sum);
  impl_->aux = float(sum / impl_->s.layers);
  return sum;
}
void MoeModel::adamw_step(const kernels::AdamWConfig& c, int t) {
  for (Param& p : impl_->params) kernels::adamw_step(p.w.data(), p.g.data(), p.m.data(), p.v.data(), p.w.size(), c, t);
}
std::vector<Param>& MoeModel::params() { return impl_->params; }
const std::vector<BlockRouting>& MoeModel::routing() const { return impl_->routing; }
const StepSeconds& MoeModel::seconds() const { return impl_->secs; }
float MoeModel::last_aux_loss() const { return impl_->aux; }
const std::vector<float>& MoeModel::inputs() const { return impl_->x0; }
const std::vector<float>& MoeModel::targets() const { return impl_->target; }

}  // namespace dtl::moe
