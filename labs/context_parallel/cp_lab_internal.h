// Shared by the context-parallel lab's files (cp_lab.h): the GPT whose attention runs across
// the CP ranks (cp_model.cpp) and what each attention call did, read from the trace
// (cp_measure.cpp).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "labs/context_parallel/cp_lab.h"
#include "labs/train/optimizer.h"

namespace dtl {

// Where this rank's event logs stood.
struct CpMarks {
  std::size_t main = 0, comm = 0;
};
CpMarks cp_marks(Comm& comm);

// One attention call (forward or backward of one block) as the trace saw it, this rank:
// the bytes it sent (point-to-point sends as they are; a library collective's event holds its
// whole buffer of P blocks on both backends, of which the P−1 leaving the rank are sent),
// the compute spans' time ("ring block", "attention block") and, for the ring, each K/V
// hop's transfer time (its receive, post to completion), the part of it after the block it
// overlapped ended (exposed), and the dK/dV hops (posted after their block: all exposed).
struct CpCallTrace {
  double sent = 0, compute_s = 0, hop_s = 0, exposed_s = 0, dkv_s = 0;
};
CpCallTrace cp_call_trace(Comm& comm, CpMarks from, CpMarks to);

// A rank's tally of its calls: the bytes of the call farthest from the formula per pass, and
// the times of the timed steps (`timed`, set by the runner).
struct CpCallLog {
  cp::CpBytes want;
  double fwd_bytes = 0, bwd_bytes = 0, fwd_dev = -1, bwd_dev = -1, calls = 0;
  bool timed = false;
  double compute_s = 0, hop_s = 0, exposed_s = 0, dkv_s = 0;
  void add(const CpCallTrace& t, bool backward);
};

// The GPT with its attention across the ranks of `cp` (set_context_parallel): each rank its
// positions of every sequence, the gradients summed over the ranks after backward, the loss
// the mean over all S·B tokens. `log` (may be null) tallies every attention call.
class CpGptRun {
 public:
  CpGptRun(const CpSettings& s, Comm& cp, cp::CpAlgo algo, MemoryTracker& mem, CpCallLog* log);
  ~CpGptRun();
  float train_step(int step);
  void adamw_step();
  std::vector<std::vector<float>> tensors(bool grads);  // the table's order, whole tensors
  // A sharded checkpoint (labs/train/gpt_sharded.h): every rank holds the whole model, rank 0
  // saves it; every rank reads all of it back.
  StagedPieces stage_checkpoint();
  std::size_t load_checkpoint(const Manifest& m);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The plain GPT on the whole batch (the one-rank reference), the same data and seed.
std::vector<std::vector<float>> gpt_tensors(Gpt& gpt, bool grads);

}  // namespace dtl
