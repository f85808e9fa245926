// Activation and recomputation rows (gpt_activation_report.h).
#include "labs/train/gpt_activation_report.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/error.h"
#include "core/memory/device_ops.h"
#include "core/trace/trace.h"
#include "labs/measure.h"

namespace dtl {

GptActivationFigures gpt_activation_figures(Comm& comm, const Gpt& model) {
  const GptActivationMeasure& m = model.activation_measure();
  GptActivationFigures f;
  f.block = m.block.empty() ? 0 : *std::max_element(m.block.begin(), m.block.end());
  f.end = m.end, f.recomputed = m.recomputed;
  f.recompute_per_block = m.recomputed_blocks > 0 ? m.recompute_seconds / double(m.recomputed_blocks) : 0;
  f.forward_per_block = m.forward_blocks > 0 ? m.forward_block_seconds / double(m.forward_blocks) : 0;
  double v[5] = {f.block, f.end, f.recomputed, f.recompute_per_block, f.forward_per_block};
  comm.all_reduce(v, v, 5, DType::f64, ReduceOp::max);
  f.block = v[0], f.end = v[1], f.recomputed = v[2], f.recompute_per_block = v[3], f.forward_per_block = v[4];
  return f;
}

double korthikanti_layer_bytes(const GptConfig& c, int tp, ex::TpMode mode, theory::Recompute r) {
  const bool sp = mode == ex::TpMode::sequence_parallel && tp > 1;
  return theory::korthikanti_layer_bytes(c.seq, c.batch, c.hidden, c.heads, tp, sp, r);
}

double recompute_flop_ratio(const GptConfig& c, theory::Recompute r) {
  const double R = c.rows(), h = c.hidden, S = c.seq, B = c.batch;
  const double gemms = 24 * R * h * h, attention = 4 * B * S * S * h, forward = gemms + attention;
  switch (r) {
    case theory::Recompute::none: return 0;
    case theory::Recompute::selective: return attention / forward;
    case theory::Recompute::full: return (16 * R * h * h + attention) / forward;
    case theory::Recompute::selective_op: throw UsageError("the GPT lab recomputes none, selective or full");
  }
  return 0;
}

void add_gpt_activation_rows(Report& rep, const std::string& prefix, const GptConfig& c, int tp, ex::TpMode mode,
                             theory::Recompute r, const GptActivationFigures& f) {
  const GptActivationBytes parts = gpt_activation_parts(c, tp, mode, {}, r);
  const std::string how = std::string(" (recompute ") + theory::recompute_name(r) + ")";
  rep.check(prefix + "activation_per_layer", "kept per layer and micro-batch" + how, f.block, parts.block, "B")
      .from("this GPT's tensors (gpt.h)");
  rep.add(prefix + "activation_per_layer_paper", "the layer in Korthikanti et al.'s terms (16-bit)", f.block, "B")
      .predict(korthikanti_layer_bytes(c, tp, mode, r), "Korthikanti et al. 2022");
  const std::string notes[] = {
      "Activations per layer, this GPT (fp32, no dropout): 4·(Rl·h input + 3·Rl·h ln_1 out, residual, ln_2 out + "
      "4·Rl LayerNorm statistics + 12·R·h/T q, k, v, attention out, c_fc out, GELU out + B·(A/T)·S² softmax) bytes.",
      "Korthikanti et al. count 2 bytes a value and add dropout: 1-byte masks (sbh after attention and after the MLP, "
      "as²b on the softmax) and the dropout's output (2as²b); they keep no LayerNorm statistics. Selective drops the "
      "softmax term, full keeps the input only (docs/labs.md, Activation recomputation)."};
  for (const std::string& note : notes)
    if (std::find(rep.notes.begin(), rep.notes.end(), note) == rep.notes.end()) rep.notes.push_back(note);
  if (r == theory::Recompute::none) return;
  rep.check(prefix + "activation_recomputed", "held while a block runs (recomputed set)", f.recomputed,
            parts.recomputed, "B")
      .from("this GPT's tensors (gpt.h)");
  rep.add(prefix + "recompute_per_block", "recomputation, one block (mean)", f.recompute_per_block, "s");
  rep.add(prefix + "recompute_vs_forward", "recomputation / block forward (time)",
          f.forward_per_block > 0 ? f.recompute_per_block / f.forward_per_block : 0, "x")
      .predict(recompute_flop_ratio(c, r), "FLOPs rerun / forward FLOPs");
  if (f.gradient_bits_differing >= 0)
    rep.check(prefix + "recompute_gradient_bits", "gradients differing from keeping all (bits)",
              f.gradient_bits_differing, 0.0, "")
        .from("a twin without recomputation");
}

void publish_activation_formula(Comm& comm, const GptActivationBytes& p, theory::Recompute r, int in_flight,
                                double paper_block) {
  Trace* tr = comm.trace();
  if (!tr) return;
  const nlohmann::json j = {{"recompute", theory::recompute_name(r)},
                            {"blocks", p.blocks},
                            {"block", p.block},
                            {"end", p.end},
                            {"recomputed", p.recomputed},
                            {"in_flight", in_flight},
                            {"kept", in_flight * p.kept()},
                            {"peak", p.peak(in_flight)},
                            {"paper_block", paper_block}};
  tr->set_meta(meta_key_name(MetaKey::activation_formula, std::to_string(comm.global_rank())), j.dump());
}

namespace {

std::vector<unsigned char> host_gradients(Gpt& model) {
  const ParamSlice p = model.whole_params();
  std::vector<unsigned char> bytes(p.count * dtype_size(p.dtype));
  copy_bytes(bytes.data(), p.grads, bytes.size());
  return bytes;
}

}  // namespace

double recompute_gradient_mismatches(Comm& comm, Gpt& model, Gpt& twin, const int* tokens, const int* targets) {
  model.forward_backward(tokens, targets);
  twin.forward_backward(tokens, targets);
  const std::vector<unsigned char> a = host_gradients(model), b = host_gradients(twin);
  const std::size_t width = dtype_size(model.precision());
  double differing = a.size() == b.size() ? 0.0 : double(a.size() / width);
  for (std::size_t i = 0; i + width <= std::min(a.size(), b.size()); i += width)
    if (std::memcmp(&a[i], &b[i], width) != 0) ++differing;
  comm.all_reduce(&differing, &differing, 1, DType::f64, ReduceOp::sum);
  return differing;
}

}  // namespace dtl
