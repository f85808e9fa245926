// Built instead of the MPI backend when Open MPI was not found at configure time.
#include "core/comm/mpi_backend.h"
#include "core/error.h"

namespace dtl {

namespace {
[[noreturn]] void mpi_unavailable() {
  throw UsageError("this dtlab was built without MPI; install libopenmpi-dev, reconfigure, or use --backend threads");
}
}  // namespace

bool mpi_backend_built() { return false; }
MpiWorld mpi_init() { mpi_unavailable(); }
RunResult run_mpi(const MpiOptions&, const std::function<void(Comm&)>&) { mpi_unavailable(); }
std::unique_ptr<Trace> merge_traces_on_root(const Trace&) { mpi_unavailable(); }
double mpi_max(double) { mpi_unavailable(); }
void mpi_broadcast_bytes(void*, std::size_t, int) { mpi_unavailable(); }
void mpi_abort(int) { mpi_unavailable(); }

}  // namespace dtl
