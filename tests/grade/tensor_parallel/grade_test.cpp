// Graded tests of the tensor-parallel exercises (exercises/tensor_parallel.h): the slices
// against ranges written by hand and tiling the layer exactly once; f and g, plain and
// sequence-parallel, on T = 1, 2 and 4 thread ranks; column- and row-parallel linear layers
// against the full layer computed here in double on one rank (y = x·Wᵀ + b and its
// backward), sliced here (never with the learner's *_slice, so a failure names the right
// exercise); and vocab-parallel cross-entropy against the full softmax cross-entropy in
// double, with logits large enough that a version without the max shift overflows.
// Every case also reads the communication back from the trace: the library collectives
// each rank called, by name, with the bytes their events record, and no point-to-point.
//
// What the bytes are: the threads backend's collective event records the whole buffer of
// the collective, T·slice elements for all_gather (its output) and reduce_scatter (its
// input), so an f or g over full_elems floats records full_elems·4 bytes whichever of
// all_reduce, all_gather or reduce_scatter it is (a ring all-reduce IS a reduce-scatter
// then an all-gather: the same bytes). On one rank (T = 1) a collective changes nothing, so
// a learner may skip it; it must not send anything else.
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/grade/tensor_parallel/grade_util.h"

using namespace dtl;
using namespace dtl::tp_grade;

namespace {

// ---- TpSlices ---------------------------------------------------------------------------------

std::string slice_text(const ex::LinearSlice& s) {
  std::ostringstream t;
  t << "W rows [" << s.row_begin << ", " << s.row_end << "), columns [" << s.col_begin << ", " << s.col_end
    << "), bias ";
  if (s.bias_begin == s.bias_end)
    t << "none";
  else
    t << "[" << s.bias_begin << ", " << s.bias_end << ")";
  return t.str();
}

bool same_slice(const ex::LinearSlice& a, const ex::LinearSlice& b) {
  const bool bias = (a.bias_begin == a.bias_end && b.bias_begin == b.bias_end) ||
                    (a.bias_begin == b.bias_begin && a.bias_end == b.bias_end);
  return a.row_begin == b.row_begin && a.row_end == b.row_end && a.col_begin == b.col_begin && a.col_end == b.col_end &&
         bias;
}

using SliceFn = ex::LinearSlice (*)(int, int, int, int);

std::string slice_case(const std::string& fn, int out, int in, int rank, int tp) {
  return fn + "(out " + str(out) + ", in " + str(in) + ", rank " + str(rank) + ", tp " + str(tp) + ")";
}

// The exercise's slice, or a failure naming the case when it throws.
std::optional<ex::LinearSlice> slice_of(SliceFn fn, const std::string& name, int out, int in, int rank, int tp) {
  try {
    return fn(out, in, rank, tp);
  } catch (const std::exception& e) {
    ADD_FAILURE() << slice_case(name, out, in, rank, tp) << ": " << e.what();
    return std::nullopt;
  }
}

struct SliceCase {
  int out, in, rank, tp;
  ex::LinearSlice want;
};

void expect_slices(SliceFn fn, const std::string& name, const std::vector<SliceCase>& cases, const std::string& why) {
  for (const SliceCase& c : cases) {
    const auto got = slice_of(fn, name, c.out, c.in, c.rank, c.tp);
    if (!got) return;
    DTL_GRADE_EXPECT(same_slice(*got, c.want))
        << slice_case(name, c.out, c.in, c.rank, c.tp) << " is " << slice_text(*got) << ", expected "
        << slice_text(c.want) << " (" << why << ")";
  }
}

// The T slices of a [out × in] layer hold every element of W exactly once, and every bias
// element exactly once in total.
void expect_tiling(SliceFn fn, const std::string& name, int out, int in, int tp) {
  std::vector<int> w(std::size_t(out) * std::size_t(in), 0), b(std::size_t(out), 0);
  const std::string what = name + " over ranks 0 .. " + str(tp - 1) + " of a layer [out " + str(out) + " × in " +
                           str(in) + "], tp " + str(tp);
  for (int r = 0; r < tp; ++r) {
    const auto s = slice_of(fn, name, out, in, r, tp);
    if (!s) return;
    const bool inside =
        0 <= s->row_begin && s->row_begin <= s->row_end && s->row_end <= out && 0 <= s->col_begin &&
        s->col_begin <= s->col_end && s->col_end <= in &&
        (s->bias_begin == s->bias_end || (0 <= s->bias_begin && s->bias_begin <= s->bias_end && s->bias_end <= out));
    DTL_GRADE_ASSERT(inside) << slice_case(name, out, in, r, tp) << " is " << slice_text(*s)
                             << ", outside the layer's W [" << out << " × " << in << "] and bias [" << out << "]";
    for (int i = s->row_begin; i < s->row_end; ++i)
      for (int j = s->col_begin; j < s->col_end; ++j) ++w[std::size_t(i) * std::size_t(in) + std::size_t(j)];
    for (int i = s->bias_begin; i < s->bias_end; ++i) ++b[std::size_t(i)];
  }
  for (std::size_t k = 0; k < w.size(); ++k)
    if (w[k] != 1) {
      ADD_FAILURE() << what << ": W element (" << k / std::size_t(in) << ", " << k % std::size_t(in) << ") is held by "
                    << w[k] << " ranks, expected exactly one (the slices must tile W)";
      return;
    }
  for (std::size_t k = 0; k < b.size(); ++k)
    if (b[k] != 1) {
      ADD_FAILURE() << what << ": bias element " << k << " is held by " << b[k]
                    << " ranks, expected exactly one (the layer adds each bias element once)";
      return;
    }
}

}  // namespace

TEST(TpSlices, ColumnParallelMatchesRangesWrittenByHand) {
  // {row_begin, row_end, col_begin, col_end, bias_begin, bias_end}
  expect_slices(ex::column_parallel_slice, "column_parallel_slice",
                {{8, 6, 0, 2, {0, 4, 0, 6, 0, 4}},
                 {8, 6, 1, 2, {4, 8, 0, 6, 4, 8}},
                 {12, 5, 0, 4, {0, 3, 0, 5, 0, 3}},
                 {12, 5, 2, 4, {6, 9, 0, 5, 6, 9}},
                 {12, 5, 3, 4, {9, 12, 0, 5, 9, 12}},
                 {7, 3, 0, 1, {0, 7, 0, 3, 0, 7}}},
                "column-parallel: rank r holds rows [r·out/T, (r+1)·out/T) of W, every column, and those bias "
                "elements");
}

TEST(TpSlices, RowParallelMatchesRangesWrittenByHand) {
  expect_slices(ex::row_parallel_slice, "row_parallel_slice",
                {{6, 8, 0, 2, {0, 6, 0, 4, 0, 6}},
                 {6, 8, 1, 2, {0, 6, 4, 8, 0, 0}},
                 {5, 12, 0, 4, {0, 5, 0, 3, 0, 5}},
                 {5, 12, 1, 4, {0, 5, 3, 6, 0, 0}},
                 {5, 12, 3, 4, {0, 5, 9, 12, 0, 0}},
                 {4, 3, 0, 1, {0, 4, 0, 3, 0, 4}}},
                "row-parallel: rank r holds columns [r·in/T, (r+1)·in/T) of W, every row; the partial outputs are "
                "summed, so only rank 0 adds the bias");
}

TEST(TpSlices, TheSlicesTileTheLayerExactlyOnce) {
  const std::pair<int, int> shapes[] = {{8, 8}, {16, 24}, {24, 8}, {64, 32}};
  for (const auto& [out, in] : shapes)
    for (const int tp : {1, 2, 4, 8}) {
      expect_tiling(ex::column_parallel_slice, "column_parallel_slice", out, in, tp);
      expect_tiling(ex::row_parallel_slice, "row_parallel_slice", out, in, tp);
    }
}

// ---- FOperator and GOperator ----------------------------------------------------------------

namespace {

constexpr int kRows = 8, kWidth = 3;  // rows divisible by every T
constexpr std::size_t kFull = std::size_t(kRows) * kWidth;

// The full tensor x (small integers, exact in any sum) and rank r's partial sums, whose
// sum over the ranks is exact too.
double full_value(std::size_t i) { return double(int(i % 7) - 3); }
double partial_value(std::size_t i, int r) { return double(int((i * 3 + std::size_t(r) * 5) % 11) - 5); }

std::string op_case(const std::string& fn, int T, TpMode m) {
  return fn + " (" + mode_name(m) + ", T " + str(T) + ", rows " + str(kRows) + " × width " + str(kWidth) + ", " +
         std::to_string(kFull) + " floats)";
}

// The rows of rank r under sequence parallelism: elements [r·full/T, (r+1)·full/T).
std::size_t slice_begin(int r, int T) { return std::size_t(r) * kFull / std::size_t(T); }

using PassFn = const float* (*)(const ex::TpGroup&, const float*, float*, std::size_t);
using SumFn = void (*)(const ex::TpGroup&, const float*, float*, std::size_t);

// f's forward or g's backward in plain mode: the identity, x itself, nothing sent.
void check_identity(PassFn fn, const std::string& name, int T) {
  const std::string w = op_case(name, T, TpMode::plain);
  const auto run = grade::run_graded(T, [&](Comm& c) {
    std::vector<float> x(kFull);
    for (std::size_t i = 0; i < kFull; ++i) x[i] = float(full_value(i));
    std::vector<float> work = nan_floats(kFull);
    const float* got = fn({c, TpMode::plain}, x.data(), work.data(), kFull);
    DTL_GRADE_EXPECT(got == x.data()) << w << ", rank " << c.rank() << ": returned "
                                      << (got == work.data() ? "its workspace" : "another pointer")
                                      << ", expected its input itself (plain mode: the tensor is replicated, so this "
                                         "direction is the identity, no copy)";
  });
  DTL_ASSERT_RAN(run, w);
  expect_pattern(run, {}, w, "plain mode: this direction is the identity");
}

// f's forward or g's backward under sequence parallelism: all-gather the ranks' rows.
void check_gather(PassFn fn, const std::string& name, int T) {
  const std::string w = op_case(name, T, TpMode::sequence_parallel);
  const auto run = grade::run_graded(T, [&](Comm& c) {
    const int r = c.rank();
    const std::size_t n = kFull / std::size_t(T), b = slice_begin(r, T);
    std::vector<float> x(n), work = nan_floats(kFull);
    for (std::size_t i = 0; i < n; ++i) x[i] = float(full_value(b + i));
    const float* got = fn({c, TpMode::sequence_parallel}, x.data(), work.data(), kFull);
    const std::string at = w + ", rank " + str(r);
    DTL_GRADE_ASSERT(got == work.data() || (T == 1 && got == x.data()))
        << at << ": returned " << (got == x.data() ? "its input, which holds only this rank's rows" : "another pointer")
        << ", expected the workspace it gathered all the rows into";
    std::vector<double> want(kFull);
    for (std::size_t i = 0; i < kFull; ++i) want[i] = full_value(i);
    grade::expect_same(std::vector<double>(got, got + kFull), want,
                       at + ", the gathered tensor (rank q's rows come from rank q)");
  });
  DTL_ASSERT_RAN(run, w);
  expect_pattern(
      run, {{"all_gather", kFull * 4}}, w,
      "one all_gather of every rank's rows; its event records the whole output, " + std::to_string(kFull) + " floats");
}

// f's backward or g's forward: sum the ranks' partial tensors, all of it (plain: all-reduce)
// or this rank's rows of it (sequence parallel: reduce-scatter).
void check_sum(SumFn fn, const std::string& name, int T, TpMode m) {
  const std::string w = op_case(name, T, m);
  const bool sp = m == TpMode::sequence_parallel;
  const auto run = grade::run_graded(T, [&](Comm& c) {
    const int r = c.rank();
    std::vector<float> partial(kFull);
    for (std::size_t i = 0; i < kFull; ++i) partial[i] = float(partial_value(i, r));
    const std::size_t n = sp ? kFull / std::size_t(T) : kFull, b = sp ? slice_begin(r, T) : 0;
    std::vector<float> out = nan_floats(n);
    fn({c, m}, partial.data(), out.data(), kFull);
    std::vector<double> want(n, 0.0);
    for (std::size_t i = 0; i < n; ++i)
      for (int q = 0; q < T; ++q) want[i] += partial_value(b + i, q);
    grade::expect_same(std::vector<double>(out.begin(), out.end()), want,
                       w + ", rank " + str(r) +
                           (sp ? ": its rows (elements " + std::to_string(b) + " .. " + std::to_string(b + n - 1) +
                                     ") of the sum over the ranks"
                               : ": the sum over the ranks"));
  });
  DTL_ASSERT_RAN(run, w);
  if (sp)
    expect_pattern(run, {{"reduce_scatter", kFull * 4}}, w,
                   "one reduce_scatter: each rank keeps its rows of the sum; its event records the whole input, " +
                       std::to_string(kFull) + " floats");
  else
    expect_pattern(run, {{"all_reduce", kFull * 4}}, w, "one all_reduce (sum) of the whole tensor");
}

}  // namespace

TEST(FOperator, PlainForwardReturnsXItselfAndSendsNothing) {
  for (const int T : kTpSizes) check_identity(ex::f_forward, "f_forward", T);
}

TEST(FOperator, PlainBackwardAllReducesTheGradient) {
  for (const int T : kTpSizes) check_sum(ex::f_backward, "f_backward", T, TpMode::plain);
}

TEST(FOperator, SequenceParallelForwardAllGathersTheRows) {
  for (const int T : kTpSizes) check_gather(ex::f_forward, "f_forward", T);
}

TEST(FOperator, SequenceParallelBackwardReduceScatters) {
  for (const int T : kTpSizes) check_sum(ex::f_backward, "f_backward", T, TpMode::sequence_parallel);
}

TEST(GOperator, PlainForwardAllReducesThePartialOutputs) {
  for (const int T : kTpSizes) check_sum(ex::g_forward, "g_forward", T, TpMode::plain);
}

TEST(GOperator, PlainBackwardReturnsDyItselfAndSendsNothing) {
  for (const int T : kTpSizes) check_identity(ex::g_backward, "g_backward", T);
}

TEST(GOperator, SequenceParallelForwardReduceScatters) {
  for (const int T : kTpSizes) check_sum(ex::g_forward, "g_forward", T, TpMode::sequence_parallel);
}

TEST(GOperator, SequenceParallelBackwardAllGathersTheRows) {
  for (const int T : kTpSizes) check_gather(ex::g_backward, "g_backward", T);
}
