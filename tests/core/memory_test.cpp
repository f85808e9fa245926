// MemoryTracker: current and peak bytes per tag, and the alloc/free events it emits.
#include "core/memory/memory.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/trace/trace.h"

using namespace dtl;

TEST(MemoryTracker, CountsCurrentAndPeakPerTag) {
  Trace trace(1);
  MemoryTracker mem(0, &trace);
  {
    Tensor p(mem, {10, 10}, DType::f32, MemTag::param);
    Tensor g(mem, {100}, DType::f16, MemTag::grad);
    EXPECT_EQ(mem.current(MemTag::param), 400u);
    EXPECT_EQ(mem.current(MemTag::grad), 200u);
    Tensor moved = std::move(g);
    EXPECT_EQ(mem.current(MemTag::grad), 200u);  // a move does not allocate
    EXPECT_EQ(moved.numel(), 100u);
  }
  EXPECT_EQ(mem.current_total(), 0u);
  EXPECT_EQ(mem.peak(MemTag::param), 400u);
  EXPECT_EQ(mem.peak_total(), 600u);
  int allocs = 0, frees = 0;
  for (const Event& e : trace.snapshot()) {
    allocs += e.kind == EventKind::alloc;
    frees += e.kind == EventKind::free;
  }
  EXPECT_EQ(allocs, 2);
  EXPECT_EQ(frees, 2);
}

TEST(MemoryTracker, CudaWithoutCudaIsAClearError) {
  MemoryTracker mem(0, nullptr);
  try {
    Tensor t(mem, {4}, DType::f32, MemTag::param, Device::cuda(0));
    FAIL() << "expected an error";
  } catch (const Error& e) { EXPECT_NE(std::string(e.what()).find("--device cpu"), std::string::npos) << e.what(); }
}
