// The lab registry: every lab the CLI, the visualizer and the tests can run.
#include "labs/collectives.h"
#include "labs/ddp.h"
#include "labs/lab.h"

namespace dtl {

const std::vector<LabInfo>& lab_registry() {
  static const std::vector<LabInfo> labs = {
      {"collectives",
       "all-reduce from point-to-point: naive, ring, binomial tree, recursive halving-doubling, vs the formulas",
       {{"algo", "ring", "algorithm", {"naive", "ring", "tree", "rhd", "all"}},
        {"collective", "all_reduce", "which collective to build", {"all_reduce", "reduce_scatter", "all_gather", "broadcast"}},
        {"op", "sum", "reduction", {"sum", "avg", "max", "min"}}},
       run_collectives_lab,
       collectives_chunk_grid,
       /*overlaps_compute=*/false,
       /*device_buffers=*/true},
      {"ddp",
       "data parallelism: naive, flat, bucketed + overlapped with backward, gradient accumulation; vs 1 rank",
       {{"variant", "bucketed", "how gradients are averaged", {"naive", "flat", "bucketed", "accumulate", "all"}},
        {"bucket-mb", "25", "bucket capacity in MiB (PyTorch DDP's default is 25)", {}},
        {"width", "256", "hidden width of the MLP", {}},
        {"depth", "4", "linear layers of the MLP", {}},
        {"batch", "64", "global batch (split over ranks)", {}},
        {"steps", "5", "training steps", {}},
        {"micro-batches", "4", "micro-batches per step for --variant accumulate", {}},
        {"precision", "fp32", "fp32, or mixed precision: bf16/fp16 weights and gradients, fp32 master, m, v",
         {"fp32", "bf16", "fp16"}}},
       run_ddp_lab,
       nullptr,
       /*overlaps_compute=*/true},
  };
  return labs;
}

}  // namespace dtl
