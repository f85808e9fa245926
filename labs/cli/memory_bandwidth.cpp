#include "labs/cli/memory_bandwidth.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <latch>
#include <thread>

namespace dtl::cli {

double MemoryBandwidth::best() const { return std::max({read, write, copy, triad}); }

void MemoryBandwidth::keep_best(const MemoryBandwidth& o) {
  read = std::max(read, o.read), write = std::max(write, o.write);
  copy = std::max(copy, o.copy), triad = std::max(triad, o.triad);
  threads = std::max(threads, o.threads);
}

MemoryBandwidthProbe::MemoryBandwidthProbe(int threads, std::size_t bytes_per_thread)
    : threads_(std::max(1, threads)), n_(std::max<std::size_t>(1, bytes_per_thread / sizeof(float))) {
  // Each thread touches its own arrays first, so their pages sit where it runs.
  a_.resize(std::size_t(threads_)), b_.resize(std::size_t(threads_)), c_.resize(std::size_t(threads_));
  sink_.assign(std::size_t(threads_), 0);
  std::vector<std::thread> ts;
  for (int t = 0; t < threads_; ++t)
    ts.emplace_back([this, t] {
      a_[std::size_t(t)].assign(n_, 1.0f), b_[std::size_t(t)].assign(n_, 2.0f), c_[std::size_t(t)].assign(n_, 0.5f);
    });
  for (auto& t : ts) t.join();
}

// All threads start together (they wait for `go` after being created); the clock runs
// from the start to the last thread's end.
template <class Kernel>
double MemoryBandwidthProbe::best_rate(int rounds, double bytes_per_element, Kernel kernel) {
  double best = 0;
  for (int round = 0; round < rounds; ++round) {
    std::latch ready(threads_);
    std::atomic<bool> go{false};
    std::vector<std::thread> ts;
    for (int t = 0; t < threads_; ++t)
      ts.emplace_back([&, t] {
        ready.count_down();
        while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
        kernel(std::size_t(t));
      });
    ready.wait();
    const auto t0 = std::chrono::steady_clock::now();
    go.store(true, std::memory_order_release);
    for (auto& t : ts) t.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, bytes_per_element * double(n_) * threads_ / s);
  }
  return best;
}

MemoryBandwidth MemoryBandwidthProbe::measure(int rounds) {
  MemoryBandwidth m;
  m.threads = threads_;
  const double f = sizeof(float);
  m.read = best_rate(rounds, f, [this](std::size_t t) {
    // Integer sums vectorize (floating-point ones would not without -ffast-math), so the
    // core is never the limit.
    std::uint32_t sum = 0;
    const float* a = a_[t].data();
    for (std::size_t i = 0; i < n_; ++i) sum += std::bit_cast<std::uint32_t>(a[i]);
    sink_[t] += double(sum);
  });
  m.write = best_rate(rounds, f, [this](std::size_t t) { std::memset(c_[t].data(), 0, n_ * sizeof(float)); });
  m.copy =
      best_rate(rounds, 2 * f, [this](std::size_t t) { std::memcpy(c_[t].data(), a_[t].data(), n_ * sizeof(float)); });
  m.triad = best_rate(rounds, 3 * f, [this](std::size_t t) {
    float* a = a_[t].data();
    const float* b = b_[t].data();
    const float* c = c_[t].data();
    for (std::size_t i = 0; i < n_; ++i) a[i] = b[i] + 0.5f * c[i];
  });
  return m;
}

}  // namespace dtl::cli
