// The MPI world outside any communicator: start-up (threads and all), and the few calls the
// command line makes on MPI_COMM_WORLD before and after a run. Every call is checked.
#include <mpi.h>

#include <cstdlib>

#include "core/comm/mpi/mpi_check.h"
#include "core/comm/mpi/mpi_types.h"
#include "core/comm/mpi_backend.h"

namespace dtl {

MpiWorld mpi_init() {
  int initialized = 0;
  DTL_MPI_CHECK(MPI_Initialized(&initialized));
  if (!initialized) {
    int provided = 0;
    DTL_MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided));
    std::atexit([] {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized) MPI_Finalize();
    });
  }
  MpiWorld w;
  DTL_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &w.rank));
  DTL_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &w.size));
  return w;
}

double mpi_max(double v) {
  DTL_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
  return v;
}

void mpi_broadcast_bytes(void* buf, std::size_t bytes, int root) {
  DTL_MPI_CHECK(MPI_Bcast(buf, as_int(bytes, "broadcast"), MPI_BYTE, root, MPI_COMM_WORLD));
}

void mpi_abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort does not return; if it did, do not go on
}

}  // namespace dtl
