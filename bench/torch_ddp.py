#!/usr/bin/env python3
"""PyTorch DDP (gloo) on the DDP lab's model, the peer of `dtlab run ddp --variant bucketed`:
an MLP of `depth` Linear layers (64 -> width -> ... -> width -> 64) with tanh-GELU between,
MSE loss, AdamW (lr 1e-3, betas 0.9/0.999, eps 1e-8, no weight decay), a global batch of
`batch` rows split over the ranks, one thread per rank, 25 MB buckets (DDP's default and
the lab's). One warm-up step, then `repeat` runs of `steps` steps; each run's mean step
time of the slowest rank. Optionally records rank 0's steps with torch.profiler.

  python3 bench/torch_ddp.py --ranks 2 --width 512 --depth 4 --batch 256 --json out.json
"""
import argparse
import json
import os
import sys
import time

# One BLAS thread per rank, as dtlab's ranks: torch.set_num_threads does not reach the OpenBLAS
# that Debian's PyTorch calls for its GEMMs (bench/torch_gpt_step.py); OpenBLAS reads this
# when loaded, and the spawned ranks inherit it.
os.environ["OPENBLAS_NUM_THREADS"] = "1"
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "python"))
from torch_mlp import make_mlp  # noqa: E402


def timed_runs(step, a):
    runs = []
    for _ in range(a.repeat):
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(a.steps):
            step()
        slowest = torch.tensor([(time.perf_counter() - t0) / a.steps], dtype=torch.float64)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
        runs.append(slowest.item())
    return runs


def rank_main(rank, a):
    torch.set_num_threads(1)
    torch.manual_seed(0)
    dist.init_process_group("gloo", rank=rank, world_size=a.ranks)
    model = DDP(make_mlp(a.width, a.depth), bucket_cap_mb=25)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    rows = a.batch // a.ranks
    x, y = torch.randn(rows, 64), torch.randn(rows, 64)

    def step():
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()

    step()  # warm-up
    runs = timed_runs(step, a)
    if a.profile and rank == 0:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            for _ in range(2):
                step()
        prof.export_chrome_trace(a.profile)
    elif a.profile:
        for _ in range(2):
            step()
    if rank == 0:
        params = sum(p.numel() for p in model.parameters())
        with open(a.json, "w") as f:
            json.dump({"impl": "pytorch-ddp-gloo", "ranks": a.ranks, "params": params, "step_s": runs}, f, indent=1)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--width", type=int, default=512)
    p.add_argument("--depth", type=int, default=4)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--port", type=int, default=29534)
    p.add_argument("--profile", default="")
    p.add_argument("--json", required=True)
    a = p.parse_args()
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ["MASTER_PORT"] = str(a.port)
    mp.spawn(rank_main, args=(a,), nprocs=a.ranks, join=True)


if __name__ == "__main__":
    main()
