#include "kernels/cpu/cpu_threads.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace dtl::kernels {

namespace {

// Waits up to kSpin for `done` to become true, then sleeps on the condition variable. A GPT
// step runs dozens of kernels back to back, each a fraction of a millisecond: a worker that
// spins a little after its part is there at once for the next (an empty parallel_for on two
// threads: 2-3 µs), and after the spin the core goes back to whatever else runs (OpenBLAS's
// idle threads spin 2^28 cycles by default, about a tenth of a second).
constexpr std::chrono::microseconds kSpin{200};

template <class Done>
void spin_then_wait(std::mutex& m, std::condition_variable& cv, Done&& done) {
  const auto until = std::chrono::steady_clock::now() + kSpin;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) {
      std::unique_lock lock(m);
      cv.wait(lock, done);
      return;
    }
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();  // yields the core's pipeline to a hyper-thread sibling while spinning
#endif
  }
}

// The workers of parallel_for: run() hands part p (1 … parts − 1) to worker p and does
// part 0 itself. The job is published under the mutex with a new generation; a worker that
// sees the generation change reads the job under the mutex too.
class ThreadPool {
 public:
  explicit ThreadPool(int workers) {
    for (int w = 1; w <= workers; ++w) threads_.emplace_back([this, w] { work(w); });
  }
  ~ThreadPool() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
      generation_.fetch_add(1);
    }
    start_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return int(threads_.size()) + 1; }

  void run(int parts, const std::function<void(int)>& part) {
    {
      std::lock_guard lock(mutex_);
      job_ = &part;
      parts_ = parts;
      pending_.store(parts - 1);
      generation_.fetch_add(1);
    }
    start_.notify_all();
    part(0);
    spin_then_wait(mutex_, done_, [this] { return pending_.load() == 0; });
  }

 private:
  void work(int index) {
    std::uint64_t seen = 0;
    for (;;) {
      spin_then_wait(mutex_, start_, [&] { return generation_.load() != seen; });
      std::unique_lock lock(mutex_);
      if (stop_) return;
      seen = generation_.load();
      if (index >= parts_) continue;  // this job has fewer parts than workers
      const std::function<void(int)>* job = job_;
      lock.unlock();
      (*job)(index);
      if (pending_.fetch_sub(1) == 1) {
        std::lock_guard done_lock(mutex_);  // under the mutex: run() cannot miss the notify
        done_.notify_one();
      }
    }
  }

  std::mutex mutex_;
  std::condition_variable start_, done_;
  const std::function<void(int)>* job_ = nullptr;  // these three: under mutex_
  int parts_ = 0;
  bool stop_ = false;
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::vector<std::thread> threads_;
};

std::unique_ptr<ThreadPool> pool;  // absent at one thread
std::mutex pool_in_use;            // one parallel_for at a time; others run in their caller
std::atomic<int> threads{1};       // pool's size, read without the lock by every kernel call

}  // namespace

void use_cpu_threads(int n) {
  n = std::max(n, 1);
  openblas_set_num_threads(1);
  std::lock_guard lock(pool_in_use);
  if (n == threads.load()) return;
  pool.reset();
  if (n > 1) pool = std::make_unique<ThreadPool>(n - 1);
  threads.store(n);
}

int cpu_threads() { return threads.load(); }

void parallel_for(std::size_t count, std::size_t grain, const std::function<void(std::size_t, std::size_t)>& body) {
  grain = std::max<std::size_t>(grain, 1);
  const std::size_t grains = count / grain;
  if (cpu_threads() == 1 || grains < 2) {  // the labs' case: no lock, no pool
    if (count > 0) body(0, count);
    return;
  }
  std::unique_lock lock(pool_in_use, std::try_to_lock);
  const std::size_t parts = lock && pool ? std::min<std::size_t>(std::size_t(pool->size()), grains) : 1;
  if (parts <= 1) {
    if (count > 0) body(0, count);
    return;
  }
  const std::size_t per_part = grains / parts * grain;
  pool->run(int(parts), [&](int p) {
    const std::size_t begin = std::size_t(p) * per_part;
    body(begin, std::size_t(p) + 1 == parts ? count : begin + per_part);
  });
}

}  // namespace dtl::kernels
