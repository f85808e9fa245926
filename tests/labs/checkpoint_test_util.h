// The checkpoint tests' comparison (checkpoint_resume_test, checkpoint_labs_test): every tensor
// of two sharded checkpoints (labs/train/checkpoint_sharded.h), element by element.
#pragma once

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <stdexcept>
#include <string>
#include <vector>

#include "labs/train/checkpoint_sharded.h"

namespace dtl::test {

// The largest |difference| over every tensor of two checkpoints, both verified first (their
// checksums); infinity when they hold other tensors, or a tensor of another size.
inline double largest_checkpoint_difference(const std::string& a_dir, const std::string& b_dir) {
  const Manifest a = read_manifest(a_dir), b = read_manifest(b_dir);
  verify_checkpoint(a);
  verify_checkpoint(b);
  if (a.tensors.size() != b.tensors.size()) return INFINITY;
  double worst = 0;
  for (const auto& [name, t] : a.tensors) {
    if (!b.tensors.count(name) || b.tensors.at(name).elements() != t.elements()) return INFINITY;
    std::vector<float> x(t.elements()), y(t.elements());
    read_tensor_range(a, name, 0, x.size(), x.data());
    read_tensor_range(b, name, 0, y.size(), y.data());
    for (std::size_t i = 0; i < x.size(); ++i) worst = std::max(worst, double(std::fabs(x[i] - y[i])));
  }
  return worst;
}

// A full disk as `ulimit -f` makes one, for this scope: SIGXFSZ ignored (as a shell's `trap ''
// XFSZ`), so every write past `bytes` fails with EFBIG; the limit and the handler restored after.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    if (getrlimit(RLIMIT_FSIZE, &old_) != 0) throw std::runtime_error("getrlimit(RLIMIT_FSIZE) failed");
    old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit small = old_;
    small.rlim_cur = bytes;
    if (setrlimit(RLIMIT_FSIZE, &small) != 0) throw std::runtime_error("setrlimit(RLIMIT_FSIZE) failed");
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &old_);
    std::signal(SIGXFSZ, old_handler_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  rlimit old_{};
  void (*old_handler_)(int) = SIG_DFL;
};

}  // namespace dtl::test
