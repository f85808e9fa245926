// The planner's arithmetic; the formulas are listed in plan.h.
#include "core/theory/plan.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include "core/error.h"
#include "core/theory/framework_memory.h"
#include "core/theory/kernel_time.h"
#include "core/theory/step_model.h"
#include "core/util/units.h"

namespace dtl::theory {

namespace {

constexpr double kBytes16 = 2;  // gradients, parameters and activations travel in 16 bits

// The forward FLOPs selective-op reruns per token: 2·in·out for each linear it recomputes, every layer.
double op_rerun_flops_per_token(const ModelSpec& m) {
  double flops = 0;
  for (const LinearShape& x : op_recomputed_linears(m, 1)) flops += 2 * x.in * x.out;
  return m.layers * flops;
}

}  // namespace

const char* axis_name(Axis a) {
  return a == Axis::dp ? "dp" : a == Axis::tp ? "tp" : a == Axis::pp ? "pp" : a == Axis::ep ? "ep" : "cp";
}

double ring_all_reduce_seconds(int n, double bytes, Link link) {
  if (n < 2) return 0;
  return 2.0 * (n - 1) * link.alpha_s + 2.0 * (n - 1) / n * bytes / link.beta_Bps;
}

namespace {

// A mixture of experts needs a shape (the experts are the shape's MLPs), 1 ≤ k ≤ E, and ep
// dividing both dp (EP is carved out of the data-parallel ranks) and E; ep > 1 needs experts.
void validate_experts(const ModelSpec& m, const ParallelConfig& p) {
  const std::string ep = "ep = " + std::to_string(p.ep) + " (--ep)";
  if (p.ep < 1) throw UsageError(ep + ": expert parallelism must be at least 1");
  if (m.experts < 1) {
    if (p.ep > 1) throw UsageError(ep + " splits experts over ranks, and this model has none: give --experts E");
    return;
  }
  if (!m.has_shape())
    throw UsageError("experts are the MLPs of the model's layers: give its shape (or --model), not --params");
  if (m.top_k < 1 || m.top_k > m.experts)
    throw UsageError("top-k = " + std::to_string(m.top_k) + " must be from 1 to the " + std::to_string(m.experts) +
                     " experts");
  if (p.dp % p.ep != 0 || m.experts % p.ep != 0)
    throw UsageError(ep + " must divide dp = " + std::to_string(p.dp) +
                     " (expert parallelism runs within the data-parallel "
                     "ranks) and the " +
                     std::to_string(m.experts) + " experts");
}

}  // namespace

void validate(const ModelSpec& m, const ClusterSpec& c, const ParallelConfig& p) {
  auto at_least_1 = [](int v, const char* what) {
    if (v < 1) throw UsageError(std::string(what) + " must be at least 1, not " + std::to_string(v));
  };
  at_least_1(p.dp, "dp");
  at_least_1(p.tp, "tp");
  at_least_1(p.pp, "pp");
  at_least_1(c.gpus, "the number of GPUs (N)");
  at_least_1(c.gpus_per_node, "GPUs per node");
  at_least_1(p.micro_batch_size, "the micro-batch size");
  at_least_1(p.micro_batches, "the number of micro-batches");
  if (!(m.parameters() > 0)) throw UsageError("the model has no parameters: give --params or its shape");
  at_least_1(p.cp, "cp");
  const long world = long(p.dp) * p.tp * p.pp * p.cp;
  if (world != c.gpus)
    throw UsageError(std::string(p.cp > 1 ? "dp·tp·pp·cp" : "dp·tp·pp") + " = " + std::to_string(p.dp) + "·" +
                     std::to_string(p.tp) + "·" + std::to_string(p.pp) + (p.cp > 1 ? "·" + std::to_string(p.cp) : "") +
                     " = " + std::to_string(world) + (p.cp > 1 ? " (--dp, --tp, --pp, --cp)" : " (--dp, --tp, --pp)") +
                     " must equal the " + std::to_string(c.gpus) + " GPUs (--gpus): change one side");
  if (m.heads > 0 && m.heads % p.tp != 0)
    throw UsageError("tp = " + std::to_string(p.tp) + " must divide the " + std::to_string(m.heads) +
                     " attention heads (each TP rank computes whole heads)");
  if (m.heads > 0 && m.hidden > 0 && m.hidden % m.heads != 0)
    throw UsageError("--heads " + std::to_string(m.heads) + " does not divide --hidden " + std::to_string(m.hidden) +
                     ": each head has hidden/heads features; choose a head count that divides the hidden size");
  if (m.kv_heads > 0 && (m.kv_heads > m.heads || m.heads % m.kv_heads != 0))
    throw UsageError("--kv-heads " + std::to_string(m.kv_heads) + " must divide the " + std::to_string(m.heads) +
                     " query heads (--heads): each key/value head serves heads/kv-heads query heads");
  if (m.kv_heads > 0 && m.kv_heads % p.tp != 0)
    throw UsageError("tp = " + std::to_string(p.tp) + " must divide the " + std::to_string(m.kv_heads) +
                     " key/value heads (--kv-heads): each TP rank holds whole key/value heads");
  if (m.layers > 0 && p.pp > m.layers)
    throw UsageError("pp = " + std::to_string(p.pp) + " stages but only " + std::to_string(m.layers) +
                     " layers: a stage needs at least one layer");
  if (p.recompute == Recompute::selective_op && (m.experts > 0 || !p.practice.flash() || !m.has_shape()))
    throw UsageError(std::string("--recompute selective-op is torchtitan's policy over dense layers with fused "
                                 "attention (SDPA): ") +
                     (!m.has_shape()  ? "give the model's shape (--model or --layers --hidden --heads --seq)"
                      : m.experts > 0 ? "drop --experts, or use none, selective or full"
                                      : "use --attention flash or flash2"));
  if (p.zero < 0 || p.zero > 3) throw UsageError("ZeRO has stages 0 (plain DDP) to 3, not " + std::to_string(p.zero));
  if (!(p.efficiency > 0 && p.efficiency <= 1))
    throw UsageError("the efficiency must be in (0, 1], not " + format_g(p.efficiency));
  if (!(c.gpu_memory > 0) || !(c.peak_flops > 0) || !(c.intra.beta_Bps > 0) || !(c.inter.beta_Bps > 0))
    throw UsageError("the cluster needs a GPU memory, a peak FLOP/s and both bandwidths above 0");
  validate_experts(m, p);
  validate_cp(m, p);
  validate_schedule(m, p);
}

namespace {

// Where an axis' groups run: the share of their ring (pp: chain) edges that join two nodes.
struct Span {
  double inter_fraction = 0;
  bool crosses_nodes = false;
};

// A group of ranks `stride` apart (core/comm/topology.h's layout); a chain (pp) has no edge
// from its last rank back to its first.
struct Group {
  int size = 1;
  long stride = 1;
  bool chain = false;
};

// Each axis as plan.h's rank order lays it out (tp fastest, then cp, dp, pp); ep the runs of
// ep consecutive dp ranks.
Group axis_group(Axis axis, const ParallelConfig& p) {
  const long tp_cp = long(p.tp) * p.cp;
  switch (axis) {
    case Axis::tp: return {p.tp, 1, false};
    case Axis::cp: return {p.cp, p.tp, false};  // a ring: the last rank sends to the first
    case Axis::dp: return {p.dp, tp_cp, false};
    case Axis::pp: return {p.pp, tp_cp * p.dp, true};
    case Axis::ep: return {p.ep, tp_cp, false};
  }
  return {};
}
// The ranks that hold the same weights (same tp and pp coordinates): cp_rank + cp·dp_rank runs
// over dp·cp consecutive values, tp apart; with cp = 1 the dp group.
Group replica_group(const ParallelConfig& p) { return {p.dp * p.cp, p.tp, false}; }
// The dp/ep ranks that hold the same experts (one per ep run).
Group expert_replica_group(const ParallelConfig& p) { return {p.dp / p.ep, long(p.tp) * p.cp * p.ep, false}; }

Span walk_group(const Group& g, const ClusterSpec& c) {
  if (g.size < 2) return {};
  long edges = 0, inter = 0;
  for (long r = 0; r < c.gpus; ++r) {
    const long coord = (r / g.stride) % g.size;
    if (g.chain && coord == g.size - 1) continue;
    const long next = coord == g.size - 1 ? r - g.stride * (g.size - 1) : r + g.stride;
    ++edges;
    if (r / c.gpus_per_node != next / c.gpus_per_node) ++inter;
  }
  return {edges ? double(inter) / double(edges) : 0.0, inter > 0};
}

// walk_group visits every GPU; a search plans each grid 12 times (ZeRO stage × recomputation),
// so the last groups' spans are kept (a million GPUs: one walk per grid, not twelve).
Span group_span(const Group& g, const ClusterSpec& c) {
  using Key = std::array<long, 5>;
  thread_local std::map<Key, Span> recent;
  const Key key{long(g.size), g.stride, long(g.chain), long(c.gpus), long(c.gpus_per_node)};
  if (const auto it = recent.find(key); it != recent.end()) return it->second;
  if (recent.size() > 64) recent.clear();
  return recent[key] = walk_group(g, c);
}

LedgerEntry entry(Axis axis, std::string what, int calls, double bytes_per_call, double seconds_per_call,
                  const Span& span) {
  LedgerEntry e;
  e.axis = axis;
  e.collective = std::move(what);
  e.calls = calls;
  e.bytes = calls * bytes_per_call;
  e.inter_bytes = e.bytes * span.inter_fraction;
  e.intra_bytes = e.bytes - e.inter_bytes;
  e.crosses_nodes = span.crosses_nodes;
  e.time_s = calls * seconds_per_call;
  return e;
}

// ZeRO's collectives over d replicas of `params` parameters on this GPU (plan.h: once per
// step for stages 0/1, per micro-batch after); `whose` names them ("", " (experts)").
// Each collective timed as NCCL would run it on the group of d ranks `stride` apart (nccl_model.h).
void add_dp_entries(Plan& out, double params, int d, long stride, const std::string& whose, const Span& span) {
  const auto& p = out.config;
  const int M = p.micro_batches;
  if (d < 2 || params <= 0) return;
  // gradients in the run's precision (practice.h: Megatron's bf16 runs reduce them in fp32), parameters in 16 bits
  const double grads = params * p.practice.grad_bytes(), weights = params * kBytes16;
  const double share = double(d - 1) / d;
  const double t_scatter = group_collective_s(out.cluster, CollectiveKind::reduce_scatter, grads, d, stride);
  const double t_gather = group_collective_s(out.cluster, CollectiveKind::all_gather, weights, d, stride);
  auto add = [&](const char* what, int calls, double bytes, double seconds) {
    out.ledger.push_back(entry(Axis::dp, what + whose, calls, bytes, seconds, span));
  };
  if (p.zero == 0) {
    add("all_reduce gradients", 1, 2 * share * grads,
        group_collective_s(out.cluster, CollectiveKind::all_reduce, grads, d, stride));
  } else if (p.zero == 1) {  // the distributed optimizer: each rank steps its 1/dp, then shares it
    add("reduce_scatter gradients", 1, share * grads, t_scatter);
    add("all_gather parameters", 1, share * weights, t_gather);
  } else if (p.zero == 2) {
    add("reduce_scatter gradients", M, share * grads, t_scatter);
    add("all_gather parameters", 1, share * weights, t_gather);
  } else {
    add("all_gather parameters (forward)", M, share * weights, t_gather);
    add("all_gather parameters (backward)", M, share * weights, t_gather);
    add("reduce_scatter gradients", M, share * grads, t_scatter);
  }
}

// Expert parallelism's all-to-alls (plan.h): dispatch and combine per MoE layer and
// micro-batch, forward and backward (and the recomputed forward), balanced load.
void add_ep_entries(Plan& out, const Span& span) {
  const auto& m = out.model;
  const auto& p = out.config;
  if (m.experts < 1 || p.ep < 2 || !m.has_shape()) return;
  const int per_layer = p.recompute == Recompute::full ? 6 : 4;
  const int calls = p.micro_batches * most_stage_layers(m.layers, p) * per_layer;
  const double rows = double(m.seq) * p.micro_batch_size / p.tp * m.top_k;  // (b·s/t)·k
  const double leaving = rows * m.hidden * kBytes16 * (p.ep - 1) / p.ep;
  const double whole = rows * m.hidden * kBytes16;  // as step_model.h times it: NCCL's grouped send/recv
  out.ledger.push_back(
      entry(Axis::ep, "all_to_all dispatch and combine", calls, leaving,
            group_collective_s(out.cluster, CollectiveKind::all_gather, whole, p.ep, long(p.tp) * p.cp), span));
}

void add_model_entries(Plan& out, const Span& tp_span, Link tp_link, const Span& pp_span, Link pp_link) {
  const auto& m = out.model;
  const auto& p = out.config;
  if (!m.has_shape()) return;
  const double sbh = double(m.seq) / p.cp * p.micro_batch_size * m.hidden;  // this GPU's s/cp positions
  const int M = p.micro_batches;
  if (p.tp > 1) {
    const int per_layer = p.recompute == Recompute::full ? 6 : 4;
    const int calls = M * most_stage_layers(m.layers, p) * per_layer;
    const double payload = sbh * kBytes16;
    out.ledger.push_back(entry(Axis::tp, "all_reduce activations", calls, 2.0 * (p.tp - 1) / p.tp * payload,
                               group_collective_s(out.cluster, CollectiveKind::all_reduce, payload, p.tp, 1), tp_span));
  }
  if (p.pp > 1) {
    const double message = sbh / p.tp * kBytes16;
    // A middle stage sends forward and backward for each of its v chunks (the model's two ends
    // send one way only: with pp 2 every rank holds one of them; a V's turn stays on the last stage)
    const int sends = pp_sends_per_micro_batch(p) * M;
    out.ledger.push_back(entry(Axis::pp, "send activations and gradients", sends, message,
                               pp_link.alpha_s + message / pp_link.beta_Bps, pp_span));
  }
}

// Context parallelism's exchange (context_parallel.h): one line per collective, per layer and
// micro-batch, each line's time the part attention's blocks do not hide (the ring's hops beyond
// their blocks; all-gather and Ulysses all of it); full recomputation reruns the forward lines.
void add_cp_entries(Plan& out, const Span& span, Link link) {
  const auto& m = out.model;
  const auto& p = out.config;
  if (p.cp < 2 || !m.has_shape()) return;
  const LayerTime layer = transformer_layer_time(out.cluster, m, p);
  const double block_f = layer.block_forward_s, block_b = layer.block_backward_s;  // the blocks from their shapes
  out.cp_ring = cp_ring(m, p, link, block_f, block_b);
  const int layers = p.micro_batches * most_stage_layers(m.layers, p);
  const int passes = p.recompute == Recompute::full ? 2 : 1;
  for (const CpLine& l : cp_lines(m, p, link, block_f, block_b)) {
    const int runs = layers * (l.backward ? 1 : passes);
    LedgerEntry e = entry(Axis::cp, l.what, runs * l.calls, l.bytes_per_call, 0, span);
    e.time_s = runs * l.exposed_s;
    out.ledger.push_back(e);
  }
}

void fill_memory(Plan& out) {
  const auto& m = out.model;
  const auto& p = out.config;
  auto& mem = out.memory;
  // The dense part over dp; each expert's over its dp/ep replicas (plan.h).
  const double experts = m.expert_parameters(), shards = double(p.tp) * p.pp;
  const double dense = (out.psi - experts) / shards, own_experts = experts / (shards * p.ep);
  const int replicas = p.dp / p.ep, d = p.dp * p.cp;  // ZeRO over dp·cp (plan.h)
  mem = rank_model_state(dense, p.zero, d, zero_precision(p.convention));
  const Memory e = rank_model_state(own_experts, p.zero, replicas, zero_precision(p.convention));
  mem.params += e.params, mem.grads += e.grads, mem.optimizer += e.optimizer;
  auto state = [&](ZeroConvention c) {
    return zero_model_state_bytes(dense, p.zero, d, c) + zero_model_state_bytes(own_experts, p.zero, replicas, c);
  };
  mem.model_state_sixteen = state(ZeroConvention::sixteen);
  mem.model_state_twelve = state(ZeroConvention::twelve);
  mem.model_state_eight = state(ZeroConvention::eight);
  mem.capacity = out.cluster.gpu_memory;
  if (!m.has_shape()) return;
  auto held = [&](double layer_bytes) {  // (layer_activation_bytes counts this GPU's s/cp positions)
    return layer_bytes * layers_in_flight(m.layers, p);
  };
  // Korthikanti's terms as the run keeps them: sequence parallelism, dropout, flash (framework_memory.h).
  mem.activations_none = held(layer_activation_bytes(m, p, Recompute::none));
  mem.activations_selective = held(layer_activation_bytes(m, p, Recompute::selective));
  mem.activations_full = held(layer_activation_bytes(m, p, Recompute::full));
  mem.activations = p.recompute == Recompute::none           ? mem.activations_none
                    : p.recompute == Recompute::selective    ? mem.activations_selective
                    : p.recompute == Recompute::selective_op ? held(layer_activation_bytes(m, p, p.recompute))
                                                             : mem.activations_full;
}

void fill_time(Plan& out) {
  const auto& m = out.model;
  const auto& p = out.config;
  const double attention = m.has_shape() ? 12.0 * m.layers * m.hidden * m.seq : 0;
  const double active = m.experts > 0 ? m.active_parameters() : out.psi;  // what one token computes with
  out.model_flops_per_token = 6 * active + attention;
  out.hardware_flops_per_token =
      out.model_flops_per_token + (p.recompute == Recompute::full           ? 2 * active + attention / 3
                                   : p.recompute == Recompute::selective    ? attention / 3
                                   : p.recompute == Recompute::selective_op ? op_rerun_flops_per_token(m)
                                                                            : 0);
  // The schedule's published idle share with equal stages (schedule.h): (P−1)/(M+P−1), interleaved
  // (P−1)/(v·M+P−1), the zero-bubble ones from one layer's F, B and W (kernel_time.h).
  pipeline::ActionTimes layer;  // (without a shape: F = B/2 = W, the papers' T_F = T_B = T_W)
  if (m.has_shape()) {
    const LayerTime l = transformer_layer_time(out.cluster, m, p);
    layer = {l.forward_s(), l.backward_s(), l.weight_gradient_s, 0};
  }
  out.bubble = p.pp > 1 ? schedule_bubble(p, layer, &out.bubble_formula, &out.bubble_tiled) : 0;
  if (!m.has_shape()) return;  // no sequence length: no tokens, so no time (plan.h)
  out.tokens_per_step = double(p.dp) * p.micro_batches * p.micro_batch_size * m.seq;
  // The step is the simulator's (step_model.h): the same components through the same 1F1B
  // pipeline simulation; only the experts' all-to-alls, which simulate does not time yet, are
  // added on top, exposed in every slot of the pipeline.
  auto& t = out.time;
  t = step_time(step_components(out), p);
  out.tokens_per_s = out.tokens_per_step / t.total();
  const double peak = double(out.cluster.gpus) * out.cluster.peak_flops;
  out.mfu = out.model_flops_per_token * out.tokens_per_s / peak;
  out.hfu = out.hardware_flops_per_token * out.tokens_per_s / peak;
}

}  // namespace

Memory rank_model_state(double rank_params, int zero, int dp, ZeroPrecision precision) {
  const ZeroBytes zb = zero_bytes_per_param(zero, dp, precision);
  Memory mem;
  mem.params = rank_params * zb.params;
  mem.grads = rank_params * zb.grads;
  mem.optimizer = rank_params * zb.optimizer;
  return mem;
}

double Plan::bytes_on(Axis a) const {
  double b = 0;
  for (const auto& e : ledger)
    if (e.axis == a) b += e.bytes;
  return b;
}

Plan plan(const ModelSpec& m, const ClusterSpec& c, const ParallelConfig& p) {
  validate(m, c, p);
  Plan out;
  out.model = m;
  out.cluster = c;
  out.config = p;
  out.psi = m.parameters();
  fill_memory(out);
  out.memory.framework = framework_memory(out);
  auto span_of = [&](Axis a) { return group_span(axis_group(a, p), c); };
  const Span dp_span = group_span(replica_group(p), c), tp_span = span_of(Axis::tp), pp_span = span_of(Axis::pp);
  auto link = [&](const Span& s) { return s.crosses_nodes ? c.inter : c.intra; };
  add_model_entries(out, tp_span, link(tp_span), pp_span, link(pp_span));
  const double experts = m.expert_parameters(), shards = double(p.tp) * p.pp;
  add_dp_entries(out, (out.psi - experts) / shards, p.dp * p.cp, p.tp, p.cp > 1 ? " (over dp·cp)" : "", dp_span);
  const Span cp_span = span_of(Axis::cp);
  add_cp_entries(out, cp_span, link(cp_span));
  if (experts > 0) {
    const Span ep_span = span_of(Axis::ep), replica_span = group_span(expert_replica_group(p), c);
    add_ep_entries(out, ep_span);
    add_dp_entries(out, experts / (shards * p.ep), p.dp / p.ep, long(p.tp) * p.cp * p.ep, " (experts)", replica_span);
  }
  double total = 0;
  for (const auto& e : out.ledger) total += e.bytes;
  for (auto& e : out.ledger) e.share = total > 0 ? e.bytes / total : 0;
  fill_time(out);
  out.formulas = plan_formulas(out);
  return out;
}

}  // namespace dtl::theory
