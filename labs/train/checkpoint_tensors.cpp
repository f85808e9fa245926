#include "labs/train/checkpoint_tensors.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "core/error.h"

namespace dtl {

namespace {

std::size_t columns(const HeldTensor& t) { return std::size_t(t.shape.back()); }

// One run when the block spans whole rows (they follow each other in the tensor too), else one
// per row: the block's row i is elements [(row_begin+i)·cols + col_begin, … + col_end).
std::vector<HeldRun> runs_of(const HeldTensor& t) {
  if (!t.runs.empty()) return t.runs;
  const std::size_t cols = columns(t), width = t.col_end - t.col_begin;
  if (t.col_begin == 0 && t.col_end == cols) return {{t.row_begin * cols, t.row_end * cols, t.offset}};
  std::vector<HeldRun> runs;
  for (std::size_t r = t.row_begin; r < t.row_end; ++r)
    runs.push_back({r * cols + t.col_begin, r * cols + t.col_end, t.offset + (r - t.row_begin) * width});
  return runs;
}

// The three tensors a held block is part of: the parameters, AdamW's m and v.
enum class StateRole { params, m, v };
struct StateTensor {
  StateRole role;
  std::vector<float> HeldState::*buffer;
};
constexpr StateTensor kStateTensors[] = {
    {StateRole::params, &HeldState::params}, {StateRole::m, &HeldState::m}, {StateRole::v, &HeldState::v}};

// The checkpoint's name of `t`'s parameters or moments.
std::string stored_name(const HeldTensor& t, StateRole role) {
  switch (role) {
    case StateRole::m: return t.m_name.empty() ? "adam.m." + t.name : t.m_name;
    case StateRole::v: return t.v_name.empty() ? "adam.v." + t.name : t.v_name;
    case StateRole::params: break;
  }
  return t.name;
}

void check_block(const HeldTensor& t, const HeldState& state) {
  std::size_t elements = 1;
  for (std::int64_t d : t.shape) elements *= std::size_t(d);
  const std::size_t rows = t.shape.size() == 2 ? std::size_t(t.shape[0]) : 1;
  const std::size_t held = std::min({state.params.size(), state.m.size(), state.v.size()});
  bool inside = !t.shape.empty() && t.shape.size() <= 2 &&
                (!t.runs.empty() || (t.row_begin <= t.row_end && t.row_end <= rows && t.col_begin <= t.col_end &&
                                     t.col_end <= columns(t)));
  if (inside)
    for (const HeldRun& run : runs_of(t))
      inside = inside && run.begin <= run.end && run.end <= elements && run.local + (run.end - run.begin) <= held;
  if (!inside) throw Error("held tensor '" + t.name + "': its block lies outside the tensor or the rank's buffers");
}

}  // namespace

HeldTensor whole_tensor(std::string name, std::vector<std::int64_t> shape, std::size_t offset) {
  HeldTensor t{std::move(name), std::move(shape)};
  t.row_end = t.shape.size() == 2 ? std::size_t(t.shape[0]) : 1;
  t.col_end = std::size_t(t.shape.back());
  t.offset = offset;
  return t;
}

HeldTensor within_flat(const HeldTensor& t, const std::string& flat, std::size_t flat_size, std::size_t at,
                       const std::string& m_name, const std::string& v_name) {
  HeldTensor out{flat, {std::int64_t(flat_size)}};
  out.saves = t.saves;
  out.m_name = m_name, out.v_name = v_name;
  for (HeldRun run : runs_of(t)) out.runs.push_back({at + run.begin, at + run.end, run.local});
  return out;
}

StagedPieces stage_held_tensors(const std::vector<HeldTensor>& held, HeldState state) {
  auto staged = std::make_shared<HeldState>(std::move(state));
  StagedPieces out;
  for (const HeldTensor& t : held) {
    check_block(t, *staged);
    if (!t.saves) continue;
    for (const StateTensor& role : kStateTensors)
      for (const HeldRun& run : runs_of(t))
        out.pieces.push_back({stored_name(t, role.role), DType::f32, t.shape, run.begin, run.end,
                              ((*staged).*role.buffer).data() + run.local});
  }
  out.bytes = 4.0 * double(staged->params.size() + staged->m.size() + staged->v.size());
  out.holder = staged;
  return out;
}

std::size_t load_held_tensors(const Manifest& m, const std::vector<HeldTensor>& held, HeldState& state) {
  for (const HeldTensor& t : held) {  // every name and shape first: a refused checkpoint changes nothing
    check_block(t, state);
    for (const StateTensor& role : kStateTensors) require_tensor(m, stored_name(t, role.role), DType::f32, t.shape);
  }
  std::size_t read = 0;
  for (const HeldTensor& t : held)
    for (const StateTensor& role : kStateTensors)
      for (const HeldRun& run : runs_of(t))
        read += read_tensor_range(m, stored_name(t, role.role), run.begin, run.end,
                                  (state.*role.buffer).data() + run.local);
  return read;
}

}  // namespace dtl
