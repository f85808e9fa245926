// The machine's memory bandwidth as `dtlab bench` uses it for ceilings: STREAM-like
// kernels run by P threads at once (as many as the ranks sharing the memory), each on its
// own preallocated, prefaulted arrays far larger than the caches. Bytes are counted as
// STREAM counts them (what the kernel names: read 1, copy 2, triad 3, write 1 per element),
// and the ceiling uses the largest rate seen, so it stays a bound for any mix of reads
// and writes an all-reduce does.
#pragma once

#include <cstddef>
#include <vector>

namespace dtl::cli {

struct MemoryBandwidth {
  double read = 0, write = 0, copy = 0, triad = 0;  // bytes/s, all P threads together
  int threads = 0;
  double best() const;
  void keep_best(const MemoryBandwidth& other);  // per kernel, the larger of the two
};

class MemoryBandwidthProbe {
 public:
  // Allocates and touches 3 arrays of `bytes_per_thread` for each of `threads` threads.
  MemoryBandwidthProbe(int threads, std::size_t bytes_per_thread);
  // Each kernel `rounds` times; the best round of each.
  MemoryBandwidth measure(int rounds = 3);

 private:
  template <class Kernel>
  double best_rate(int rounds, double bytes_per_element, Kernel kernel);
  int threads_;
  std::size_t n_;  // floats per array
  std::vector<std::vector<float>> a_, b_, c_;
  std::vector<double> sink_;  // the read kernel's sums, so it is not optimized away
};

}  // namespace dtl::cli
