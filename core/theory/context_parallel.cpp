// Ring attention's exchange and the cp axis' rules (context_parallel.h).
#include "core/theory/context_parallel.h"

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/theory/plan.h"

namespace dtl::theory {

namespace {
constexpr double kExchangeBytes = 2;  // K, V, dK and dV travel in 16 bits, as the planner counts activations
}  // namespace

double cp_block_forward_flops(const ModelSpec& m, const ParallelConfig& p) {
  const double n = double(m.seq) / p.cp;  // positions per GPU
  return 4.0 * p.micro_batch_size * n * n * m.hidden / p.tp;
}

CpRing cp_ring(const ModelSpec& m, const ParallelConfig& p, Link link, double block_forward_s,
               double block_backward_s) {
  CpRing r;
  r.cp = p.cp;
  if (p.cp < 2 || !m.has_shape()) return r;
  const double n = double(m.seq) / p.cp;
  r.chunk_bytes = 2.0 * p.micro_batch_size * n * (double(m.hidden) / p.tp) * kExchangeBytes;  // K and V
  r.forward_hops = p.cp - 1;
  r.backward_kv_hops = p.cp - 1;
  r.backward_dkv_hops = p.cp;  // the last brings dK/dV home
  r.block_forward_s = block_forward_s, r.block_backward_s = block_backward_s;
  r.hop_s = link.alpha_s + r.chunk_bytes / link.beta_Bps;
  const double step_backward_s = link.alpha_s + 2 * r.chunk_bytes / link.beta_Bps;  // K/V and dK/dV at once
  r.exposed_forward_s = r.forward_hops * std::max(0.0, r.hop_s - block_forward_s);
  r.exposed_backward_s = (p.cp - 1) * std::max(0.0, step_backward_s - block_backward_s) + r.hop_s;
  r.overlapped_s =
      r.forward_hops * std::min(r.hop_s, block_forward_s) + (p.cp - 1) * std::min(step_backward_s, block_backward_s);
  return r;
}

const char* cp_algo_name(CpAlgo a) {
  for (const auto& [name, algo] : kCpAlgoNames)
    if (algo == a) return name;
  return "?";
}

namespace {

// The ring's three lines (context_parallel.h): forward hops, backward K/V, backward dK/dV home.
std::vector<CpLine> ring_lines(const CpRing& r) {
  return {
      {"send K/V (ring attention, forward)", false, r.forward_hops, r.chunk_bytes, r.exposed_forward_s},
      {"send K/V (ring attention, backward)", true, r.backward_kv_hops, r.chunk_bytes, r.exposed_backward_s - r.hop_s},
      {"send dK/dV (ring attention, backward)", true, r.backward_dkv_hops, r.chunk_bytes, r.hop_s}};
}

// Llama 3's all-gather of K/V and reduce-scatter of dK/dV: (cp−1)·chunk each, ring α-β, exposed.
std::vector<CpLine> all_gather_lines(const CpRing& r, Link link) {
  const double bytes = (r.cp - 1) * r.chunk_bytes, s = (r.cp - 1) * link.alpha_s + bytes / link.beta_Bps;
  return {{"all_gather K/V (forward)", false, 1, bytes, s}, {"reduce_scatter dK/dV (backward)", true, 1, bytes, s}};
}

// Ulysses' four all-to-alls: Q, K, V (3·b·n·h/t) and the output (b·n·h/t), (cp−1)/cp leaving.
std::vector<CpLine> ulysses_lines(const ModelSpec& m, const ParallelConfig& p, Link link) {
  const double n = double(m.seq) / p.cp, leaving = double(p.cp - 1) / p.cp;
  const double out = leaving * p.micro_batch_size * n * m.hidden / p.tp * kExchangeBytes, qkv = 3 * out;
  auto seconds = [&](double bytes) { return (p.cp - 1) * link.alpha_s + bytes / link.beta_Bps; };
  return {{"all_to_all Q/K/V (Ulysses, forward)", false, 1, qkv, seconds(qkv)},
          {"all_to_all output (Ulysses, forward)", false, 1, out, seconds(out)},
          {"all_to_all output gradient (Ulysses, backward)", true, 1, out, seconds(out)},
          {"all_to_all Q/K/V gradients (Ulysses, backward)", true, 1, qkv, seconds(qkv)}};
}

}  // namespace

std::vector<CpLine> cp_lines(const ModelSpec& m, const ParallelConfig& p, Link link, double block_forward_s,
                             double block_backward_s) {
  if (p.cp < 2 || !m.has_shape()) return {};
  const CpRing r = cp_ring(m, p, link, block_forward_s, block_backward_s);
  switch (p.cp_algo) {
    case CpAlgo::ring: return ring_lines(r);
    case CpAlgo::all_gather: return all_gather_lines(r, link);
    case CpAlgo::ulysses: return ulysses_lines(m, p, link);
  }
  return {};
}

void validate_cp(const ModelSpec& m, const ParallelConfig& p) {
  const std::string cp = "cp = " + std::to_string(p.cp) + " (--cp)";
  if (p.cp < 1) throw UsageError(cp + ": context parallelism must be at least 1");
  if (p.cp == 1) return;
  if (!m.has_shape())
    throw UsageError(cp +
                     " splits each sequence, and a model given by --params alone has no sequence length: give its "
                     "shape (--layers --hidden --heads --seq --vocab) or --model");
  if (m.seq % (2 * p.cp) != 0)
    throw UsageError(cp + ": the zig-zag split cuts each sequence into 2·cp = " + std::to_string(2 * p.cp) +
                     " equal chunks, and s = " + std::to_string(m.seq) +
                     " does not divide by it: pick a cp with 2·cp "
                     "dividing --seq");
  if (p.cp_algo == CpAlgo::ulysses && (m.heads % p.tp != 0 || (m.heads / p.tp) % p.cp != 0))
    throw UsageError(cp + " with --cp-algo ulysses gives each GPU whole heads: the " + std::to_string(m.heads) +
                     " heads / tp " + std::to_string(p.tp) + " must divide by cp; pick such a cp, or --cp-algo ring");
  if (m.experts > 0)
    throw UsageError(cp +
                     " with --experts is not planned (the experts' groups over dp·cp are not modelled): drop --cp or "
                     "--experts");
}

}  // namespace dtl::theory
