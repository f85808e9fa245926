// Open MPI's own MPI_Allreduce through the timing method of `dtlab bench` (the peer in
// bench/peers.sh): float sum, out of place, buffers for the largest size allocated and
// prefaulted once; per size `warmup` untimed calls, a barrier, `iters` timed calls, the
// slowest rank's mean. Writes the rows `dtlab bench --json` writes (bytes, time_us,
// busbw_GBps), so the same report reads both.
//
//   mpirun -np 4 build/release/bench/dtl-mpi-allreduce 1024 67108864 16 10 3 out.json
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

struct Options {
  std::size_t min_bytes = 1024, max_bytes = 64 << 20;
  double factor = 16;
  int iters = 10, warmup = 3;
  std::string json_path;
};

double time_one_size(std::vector<float>& send, std::vector<float>& recv, std::size_t count, const Options& o) {
  for (int i = 0; i < o.warmup; ++i)
    MPI_Allreduce(send.data(), recv.data(), int(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  for (int i = 0; i < o.iters; ++i)
    MPI_Allreduce(send.data(), recv.data(), int(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  double seconds = (MPI_Wtime() - t0) / o.iters;
  MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return seconds;
}

std::string sweep_json(const Options& o, int P) {
  std::vector<float> send(o.max_bytes / sizeof(float), 1.0f), recv(send.size(), 0.0f);  // touched: prefaulted
  std::string rows;
  for (double s = double(o.min_bytes); s <= double(o.max_bytes) * 1.0000001; s *= o.factor) {
    const std::size_t count = std::size_t(s) / sizeof(float);
    const double t = time_one_size(send, recv, count, o);
    const double bytes = double(count * sizeof(float)), busbw = bytes / t / 1e9 * 2.0 * (P - 1) / P;
    char row[200];
    std::snprintf(row, sizeof row,
                  "%s\n    {\"bytes\": %.0f, \"inplace\": false, \"time_us\": %.3f, \"busbw_GBps\": %.6f}",
                  rows.empty() ? "" : ",", bytes, t * 1e6, busbw);
    rows += row;
    if (o.factor <= 1) break;
  }
  return "{\"impl\": \"MPI_Allreduce\", \"backend\": \"openmpi\", \"ranks\": " + std::to_string(P) + ", \"rows\": [" +
         rows + "\n]}\n";
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, P = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  if (argc != 7) {
    if (rank == 0) std::fprintf(stderr, "usage: dtl-mpi-allreduce MIN_BYTES MAX_BYTES FACTOR ITERS WARMUP OUT.json\n");
    MPI_Finalize();
    return 2;
  }
  const Options o{std::strtoull(argv[1], nullptr, 10),
                  std::strtoull(argv[2], nullptr, 10),
                  std::atof(argv[3]),
                  std::atoi(argv[4]),
                  std::atoi(argv[5]),
                  argv[6]};
  const std::string json = sweep_json(o, P);
  if (rank == 0) {
    FILE* f = std::fopen(o.json_path.c_str(), "w");
    if (!f || std::fputs(json.c_str(), f) < 0)
      std::fprintf(stderr, "dtl-mpi-allreduce: cannot write %s\n", o.json_path.c_str());
    if (f) std::fclose(f);
  }
  MPI_Finalize();
  return 0;
}
