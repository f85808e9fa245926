// Built instead of the MPI backend when Open MPI was not found at configure time.
#include "core/comm/mpi_backend.h"
#include "core/error.h"

namespace dtl {

namespace {
[[noreturn]] void unavailable() {
  throw UsageError("this dtlab was built without MPI; install libopenmpi-dev, reconfigure, or use --backend threads");
}
}  // namespace

bool mpi_backend_built() { return false; }
MpiWorld mpi_init() { unavailable(); }
RunResult run_mpi(const MpiOptions&, const std::function<void(Comm&)>&) { unavailable(); }
std::unique_ptr<Trace> merge_traces_on_root(const Trace&) { unavailable(); }
double mpi_max(double) { unavailable(); }
void mpi_broadcast_bytes(void*, std::size_t, int) { unavailable(); }
void mpi_abort(int) { unavailable(); }

}  // namespace dtl
