// Built instead of the NCCL backend when CUDA or NCCL was not found at configure time.
#include "core/comm/nccl_backend.h"
#include "core/error.h"

namespace dtl {

namespace {
[[noreturn]] void nccl_unavailable() {
  throw UsageError(
      "this dtlab was built without NCCL (it needs the CUDA toolkit and NCCL at configure time); "
      "rebuild on a machine with both, or use --backend threads or mpi");
}
}  // namespace

bool nccl_backend_built() { return false; }
int nccl_visible_gpus(std::string* problem) {
  if (problem) *problem = "built without CUDA";
  return 0;
}
RunResult run_nccl_threads(const NcclOptions&, const std::function<void(Comm&)>&) { nccl_unavailable(); }
RunResult run_nccl_mpi(const NcclOptions&, const std::function<void(Comm&)>&) { nccl_unavailable(); }

}  // namespace dtl
