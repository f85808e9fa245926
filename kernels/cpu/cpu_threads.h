// How many cores dtlab's own CPU kernels use.
//
// One by default: in the labs the ranks are the parallelism (one rank per core). A process
// that runs one rank on several cores (`dtlab bench-step --threads N`) gives its kernels N
// threads of one pool: the linear layers split their GEMMs by rows, GELU, LayerNorm and
// AdamW their rows or elements, attention its (batch, head) pairs. OpenBLAS itself stays at
// one thread: its idle workers spin for a while after each GEMM, on the very cores the
// other kernels then need, and it split attention's small GEMMs at a loss (30 → 38 ms per
// step on two threads). Measured at h 256, s 256 on two cores: the GPT's step took 190 ms
// with OpenBLAS's two threads beside the pool, 146 ms with the pool splitting the GEMMs
// too.
//
// GELU, LayerNorm, AdamW and attention give the same bits on any number of threads: each
// element is computed by the same code whatever the split. The linear layers' GEMM parts
// need not: OpenBLAS may sum a small part with another kernel (its small-matrix kernels on
// SkylakeX and Cooperlake) or a row-tile cut by the split with its edge kernel, so they are
// within float32 rounding of one thread's (tests/kernels/cpu_threads_test.cpp checks both).
#pragma once

#include <cstddef>
#include <functional>

namespace dtl::kernels {

// n threads for the kernels (n >= 1; OpenBLAS at one). Call it before the kernels run, not
// while they do. A process whose ranks are threads keeps 1 (use_one_blas_thread).
void use_cpu_threads(int n);
int cpu_threads();

// body(begin, end) over [0, count), in up to cpu_threads() contiguous parts of whole
// `grain`s (the last part takes the rest); the caller runs the first part and returns when
// all are done. One part, in the caller, when there is one thread, count is under two
// grains, or another thread is using the pool (ranks that are threads, each on its own core).
void parallel_for(std::size_t count, std::size_t grain, const std::function<void(std::size_t, std::size_t)>& body);

}  // namespace dtl::kernels
