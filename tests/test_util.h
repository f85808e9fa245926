// Helpers for tests that run a body on N thread ranks.
#pragma once

#include <gtest/gtest.h>

#include <functional>

#include "core/comm/threads_backend.h"

namespace dtl::test {

// Runs body on `ranks` threads and fails the test (with the error) if any rank failed.
inline void run_ranks(int ranks, const std::function<void(Comm&)>& body, Trace* trace = nullptr,
                      double timeout_s = 30) {
  ThreadsOptions opt;
  opt.world_size = ranks;
  opt.trace = trace;
  opt.timeout_s = timeout_s;
  const RunResult r = run_threads(opt, body);
  ASSERT_TRUE(r.ok()) << "with " << ranks << " ranks: " << r.error;
}

inline const int kWorldSizes[] = {1, 2, 3, 4, 7, 8};

}  // namespace dtl::test
