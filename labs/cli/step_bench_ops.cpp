// `dtlab bench-step`: the timed steps' median and spread, and (--model gpt --profile-ops) the
// per-op table of the GPT's CPU step, each op against the ceiling measured in the same run.
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_threads.h"
#include "kernels/cpu/kernels.h"
#include "labs/cli/kernels_bench.h"
#include "labs/cli/step_bench.h"
#include "labs/train/op_profile.h"

namespace dtl::cli {

namespace {

// cblas_sgemm's FLOP/s on [B × I]·[O × I]ᵀ, its rows split over the CPU threads as the
// linear kernels split theirs (kernels/cpu/cpu_threads.h).
double sgemm_rate(std::size_t B, std::size_t I, std::size_t O) {
  std::vector<float> X(B * I, 0.5f), W(O * I, 0.25f), Y(B * O);
  const double s = best_seconds(3, [&] {
    kernels::parallel_for(B, 64, [&](std::size_t first, std::size_t last) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(last - first), int(O), int(I), 1.0f,
                  X.data() + first * I, int(I), W.data(), int(I), 0.0f, Y.data() + first * O, int(O));
    });
  });
  return 2.0 * double(B) * double(O) * double(I) / s;
}

// The GEMM ceiling: the better of the model's own MLP shape, [rows × h]·[4h × h]ᵀ, and a
// 1024³ product (small widths do not reach the machine's rate).
double gemm_ceiling(int rows, int hidden) {
  return std::max(sgemm_rate(std::size_t(rows), std::size_t(hidden), 4 * std::size_t(hidden)),
                  sgemm_rate(1024, 1024, 1024));
}

// bench-kernels' memory ceiling over 64 MiB (past every cache).
double memory_ceiling_64MiB() {
  const std::size_t n = std::size_t(16) << 20;
  std::vector<float> src(n, 1.0f), dst(n, 0.0f);
  return memory_ceiling(3, src, dst).best() * 1e9;
}

}  // namespace

StepTimes time_steps(int steps, const std::function<void()>& step) {
  std::vector<double> s;
  for (int i = 0; i < steps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    step();
    s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  StepTimes t;
  if (s.empty()) return t;
  double total = 0;
  for (double x : s) total += x;
  std::sort(s.begin(), s.end());
  return {s[s.size() / 2], s.front(), s.back(), total / double(s.size())};
}

void print_step_times(const StepTimes& t, double tflops) {
  std::printf("step_ms %.3f\nstep_spread_ms %.3f %.3f\nachieved_TFLOPs %.4f\n", t.median_s * 1e3, t.min_s * 1e3,
              t.max_s * 1e3, tflops);
}

void print_op_profile(const OpProfile& profile, int steps, double step_s, int rows, int hidden) {
  const double gemm = gemm_ceiling(rows, hidden), memory = memory_ceiling_64MiB();
  std::vector<std::pair<std::string, OpStats>> ops(profile.ops.begin(), profile.ops.end());
  std::sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
  std::printf("\nper op (the timed steps' totals / %d steps):\n", steps);
  std::printf("%-24s %10s %10s %7s %12s %-8s %10s\n", "op", "calls/step", "ms/step", "share", "rate", "unit",
              "of ceiling");
  double inside = 0;
  for (const auto& [name, st] : ops) {
    inside += st.seconds;
    const bool flops = st.flops > 0;  // a GEMM op: FLOP/s against sgemm; else bytes against the copy
    const double rate = (flops ? st.flops : st.bytes) / st.seconds;
    std::printf("%-24s %10.1f %10.3f %6.1f%% %12.2f %-8s %9.0f%%\n", name.c_str(), double(st.calls) / steps,
                st.seconds / steps * 1e3, 100 * st.seconds / steps / step_s, rate * 1e-9, flops ? "GFLOP/s" : "GB/s",
                100 * rate / (flops ? gemm : memory));
  }
  const double outside = step_s - inside / steps;
  std::printf("%-24s %10s %10.3f %6.1f%%  (the model's own copies, pooling and bookkeeping)\n", "(outside the ops)", "",
              outside * 1e3, 100 * outside / step_s);
  std::printf(
      "ceilings measured now (%s, %d thread%s): cblas_sgemm %.1f GFLOP/s (the better of [%d x %d]·[%d x %d]^T "
      "and 1024^3); copying 64 MiB %.1f GB/s (the best of memcpy, a copy loop and an in-place update; read + "
      "write: above 100%%, the op's data stayed in the caches)\n",
      kernels::blas_kernels().c_str(), kernels::cpu_threads(), kernels::cpu_threads() == 1 ? "" : "s", gemm * 1e-9,
      rows, hidden, 4 * hidden, hidden, memory * 1e-9);
}

}  // namespace dtl::cli
