// The GPT's parameters: the table of named tensors and how each is cut across the tp
// group, the deterministic initialization (the same full model whatever T), gathering a
// tensor back into the full layout, and the activation-memory prediction.
#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/memory/device_ops.h"
#include "labs/train/gpt.h"
#include "labs/train/splitmix.h"

namespace dtl {

std::string gpt_config_problem(const GptConfig& c, int tp, ex::TpMode mode) {
  const auto n = [](int v) { return std::to_string(v); };
  if (c.vocab < 1 || c.seq < 1 || c.hidden < 1 || c.heads < 1 || c.layers < 1 || c.batch < 1)
    return "vocab, seq, hidden, heads, layers and batch must all be at least 1";
  if (tp < 1) return "the tensor-parallel degree must be at least 1, not " + n(tp);
  if (c.hidden % c.heads) return "hidden " + n(c.hidden) + " must be divisible by heads " + n(c.heads);
  if (tp > c.heads)
    return "tensor-parallel degree " + n(tp) + " exceeds the " + n(c.heads) + " heads (a rank holds whole heads)";
  if (c.heads % tp) return "heads " + n(c.heads) + " must be divisible by the tensor-parallel degree " + n(tp);
  if ((4 * c.hidden) % tp) return "the MLP width 4·hidden = " + n(4 * c.hidden) + " must be divisible by " + n(tp);
  if (c.vocab % tp) return "vocab " + n(c.vocab) + " must be divisible by the tensor-parallel degree " + n(tp);
  if (mode == ex::TpMode::sequence_parallel && c.seq % tp)
    return "sequence parallelism needs seq " + n(c.seq) + " divisible by the tensor-parallel degree " + n(tp);
  return {};
}

// The tensors of the held part, in the whole model's order; `id` counts every tensor of
// the whole model, held or not, so a stage draws the same values as the whole model.
void Gpt::build_table() {
  const std::int64_t V = c_.vocab, S = c_.seq, h = c_.hidden, T = T_;
  std::size_t id = 0;
  const auto add = [&](bool held, int layer, std::string name, std::vector<std::int64_t> full,
                       std::vector<std::int64_t> local, GptSplit split, bool sequence_partial,
                       GptStart start = GptStart::drawn) {
    if (held) {
      const ParamTensor& p = layout_.add(layer, name, local);
      tensors_.push_back(
          {std::move(name), std::move(full), std::move(local), p.range, split, sequence_partial, id, start});
    }
    ++id;
  };
  add(span_.embedding, 0, "wte", {V, h}, {V / T, h}, GptSplit::vocab_rows, false);
  add(span_.embedding, 0, "wpe", {S, h}, {S, h}, GptSplit::replicated, true);
  for (int i = 0; i < c_.layers; ++i) {
    const bool held = i >= span_.first && i <= span_.last;
    const std::string p = "h." + std::to_string(i) + ".";
    const auto layer_norm = [&](const std::string& ln) {
      add(held, i + 1, p + ln + ".weight", {h}, {h}, GptSplit::replicated, true, GptStart::ones);
      add(held, i + 1, p + ln + ".bias", {h}, {h}, GptSplit::replicated, true, GptStart::zeros);
    };
    layer_norm("ln_1");
    add(held, i + 1, p + "attn.c_attn.weight", {3 * h, h}, {3 * h / T, h}, GptSplit::qkv_column, false);
    add(held, i + 1, p + "attn.c_attn.bias", {3 * h}, {3 * h / T}, GptSplit::qkv_column, false, GptStart::zeros);
    add(held, i + 1, p + "attn.c_proj.weight", {h, h}, {h, h / T}, GptSplit::row, false);
    add(held, i + 1, p + "attn.c_proj.bias", {h}, {h}, GptSplit::replicated, false,  // rank 0 adds it, all update it
        GptStart::zeros);
    layer_norm("ln_2");
    add(held, i + 1, p + "mlp.c_fc.weight", {4 * h, h}, {4 * h / T, h}, GptSplit::column, false);
    add(held, i + 1, p + "mlp.c_fc.bias", {4 * h}, {4 * h / T}, GptSplit::column, false, GptStart::zeros);
    add(held, i + 1, p + "mlp.c_proj.weight", {h, 4 * h}, {h, 4 * h / T}, GptSplit::row, false);
    add(held, i + 1, p + "mlp.c_proj.bias", {h}, {h}, GptSplit::replicated, false, GptStart::zeros);
  }
  add(span_.head, c_.layers + 1, "ln_f.weight", {h}, {h}, GptSplit::replicated, true, GptStart::ones);
  add(span_.head, c_.layers + 1, "ln_f.bias", {h}, {h}, GptSplit::replicated, true, GptStart::zeros);
  wte_ = span_.embedding ? 0 : kNone;
  if (span_.head && !span_.embedding) {  // the tied head's own copy (gpt.h), drawn as wte: id 0
    wte_ = tensors_.size();
    id = 0;
    add(true, c_.layers + 1, "wte", {V, h}, {V / T, h}, GptSplit::vocab_rows, false);
  }
}

const GptTensor& Gpt::tensor(std::string_view name) const {
  for (const GptTensor& t : tensors_)
    if (t.name == name) return t;
  throw Error("the GPT has no tensor named \"" + std::string(name) + "\"");
}

namespace {
std::int64_t cols_of(const std::vector<std::int64_t>& shape) { return shape.size() > 1 ? shape[1] : 1; }
}  // namespace

std::size_t Gpt::full_index(const GptTensor& t, int rank, std::size_t local) const {
  // The exercises' slices say which rows or columns of the full tensor a rank holds.
  const int out = int(t.full_shape[0]), in = int(cols_of(t.full_shape));
  const std::size_t local_cols = std::size_t(cols_of(t.local_shape));
  std::size_t r = local / local_cols, col = local % local_cols;
  switch (t.split) {
    case GptSplit::replicated: break;
    case GptSplit::column:
    case GptSplit::vocab_rows: r += std::size_t(ex::column_parallel_slice(out, in, rank, T_).row_begin); break;
    case GptSplit::qkv_column: {  // each of Q, K and V (h rows each) is sliced like a column-parallel layer
      const int h = out / 3;
      const std::size_t block_rows = std::size_t(h / T_), part = r / block_rows;
      r = part * std::size_t(h) + std::size_t(ex::column_parallel_slice(h, in, rank, T_).row_begin) + r % block_rows;
      break;
    }
    case GptSplit::row: col += std::size_t(ex::row_parallel_slice(out, in, rank, T_).col_begin); break;
  }
  return r * std::size_t(in) + col;
}

namespace {
// Standard normal by Box–Muller: √(−2 ln u1)·cos(2π u2), u1 in (0, 1], u2 in [0, 1).
double normal_draw(std::uint32_t seed, std::size_t tensor, std::size_t index) {
  const std::uint64_t a = splitmix64(splitmix64((std::uint64_t(seed) << 20) ^ tensor) + index), b = splitmix64(a);
  const double u1 = (double(a >> 11) + 1.0) * 0x1.0p-53, u2 = double(b >> 11) * 0x1.0p-53;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

}  // namespace

void Gpt::initialize(std::uint32_t seed, const GptInit& init) {
  std::vector<float> p(num_params());  // drawn on the host, then copied to the device
  for (std::size_t t = 0; t < tensors_.size(); ++t) {
    const GptTensor& g = tensors_[t];
    const double base = g.start == GptStart::ones ? 1.0 : 0.0;
    const bool draw = g.start == GptStart::drawn || init.perturb_all;
    for (std::size_t i = 0; i < g.range.size(); ++i) {
      const double noise = draw ? init.std * normal_draw(seed, g.id, full_index(g, rank_, i)) : 0.0;
      p[g.range.begin + i] = float(base + noise);
    }
  }
  store_floats({0, num_params()}, p.data());  // rounded to the model's precision
}

std::vector<float> Gpt::full_tensor(std::string_view name, GptBuffer which) {
  const GptTensor& t = tensor(name);
  const std::vector<float> local = load_floats(t.range, which);
  const std::size_t n = t.range.size();
  std::size_t full_n = 1;
  for (std::int64_t d : t.full_shape) full_n *= std::size_t(d);
  if (t.split == GptSplit::replicated) return local;
  std::vector<float> full(full_n);
  std::vector<float> gathered(n * std::size_t(T_));
  if (tp_active())
    tp_.comm.all_gather(local.data(), gathered.data(), n, DType::f32);
  else
    gathered = local;
  for (int q = 0; q < T_; ++q)
    for (std::size_t i = 0; i < n; ++i) full[full_index(t, q, i)] = gathered[std::size_t(q) * n + i];
  return full;
}

void Gpt::set_full_tensor(std::string_view name, const std::vector<float>& full) {
  const GptTensor& t = tensor(name);
  std::size_t full_n = 1;
  for (std::int64_t d : t.full_shape) full_n *= std::size_t(d);
  if (full.size() != full_n)
    throw Error("set_full_tensor(\"" + t.name + "\"): " + std::to_string(full.size()) + " values, the tensor has " +
                std::to_string(full_n));
  std::vector<float> mine(t.range.size());
  for (std::size_t i = 0; i < mine.size(); ++i) mine[i] = full[full_index(t, rank_, i)];
  store_floats(t.range, mine.data());
}

std::vector<std::string> Gpt::sequence_partial_tensors() const {
  std::vector<std::string> names;
  if (!sp_) return names;
  for (const GptTensor& t : tensors_)
    if (t.sequence_partial) names.push_back(t.name);
  return names;
}

std::size_t Gpt::sequence_partial_numel() const {
  std::size_t n = 0;
  if (sp_)
    for (const GptTensor& t : tensors_) n += t.sequence_partial ? t.range.size() : 0;
  return n;
}

void Gpt::all_reduce_sequence_partial_grads() {
  // One all-reduce for all of them, in the gradients' own type: packed, summed, unpacked.
  if (!sp_) return;
  void* pack = sp_pack_.data();
  const std::size_t element_bytes = dtype_size(precision_);
  std::size_t at = 0;
  for (const GptTensor& t : tensors_)
    if (t.sequence_partial) {
      copy_bytes(element(pack, at, precision_), element(grads_.data(), t.range.begin, precision_),
                 t.range.size() * element_bytes);
      at += t.range.size();
    }
  tp_.comm.all_reduce(pack, pack, at, precision_, ReduceOp::sum);
  at = 0;
  for (const GptTensor& t : tensors_)
    if (t.sequence_partial) {
      copy_bytes(element(grads_.data(), t.range.begin, precision_), element(pack, at, precision_),
                 t.range.size() * element_bytes);
      at += t.range.size();
    }
}

}  // namespace dtl
