// Per-op time of the CPU's TrainOps: dtlab's side of the per-op table that
// `dtlab bench-step --model gpt --profile-ops` prints beside PyTorch's profiler
// (bench/gpt_vs_torch.sh --ops), so each op's share of a step is known before optimizing.
//
// While a ScopedOpProfile lives, train_ops(Device::cpu()) hands out a decorator that times
// every call on the wall clock and counts its work from the arguments: FLOPs for the GEMM
// ops (linear, attention), bytes read and written for the memory-bound ones. A model built
// meanwhile is profiled (it keeps the ops it was built with). One profile at a time; the
// one-rank bench is its user, so there is no locking.
#pragma once

#include <map>
#include <string>

namespace dtl {

class TrainOps;

struct OpStats {
  long long calls = 0;
  double seconds = 0;
  double flops = 0;  // multiply-adds count 2; 0 for memory-bound ops
  double bytes = 0;  // the least traffic: each input read once, each output written once
};

struct OpProfile {
  std::map<std::string, OpStats> ops;  // by the TrainOps method's name
  void reset() { ops.clear(); }
};

class ScopedOpProfile {
 public:
  explicit ScopedOpProfile(OpProfile& profile);
  ~ScopedOpProfile();
  ScopedOpProfile(const ScopedOpProfile&) = delete;
  ScopedOpProfile& operator=(const ScopedOpProfile&) = delete;
};

// The timing decorator around `cpu`, while a profile is installed; nullptr otherwise.
TrainOps* profiled_cpu_ops(TrainOps& cpu);

}  // namespace dtl
