#!/usr/bin/env python3
"""torch.distributed all_reduce with gloo, timed as `dtlab bench` times its own: float sum,
out of place (a copy of the input is all-reduced: gloo works in place), buffers for the
largest size allocated and written once (prefaulted), per size `warmup` untimed calls, a
barrier, `iters` timed calls, the slowest rank's mean. P processes on this machine.
Writes the rows `dtlab bench --json` writes, for bench/peers.sh's report.

  python3 bench/torch_allreduce.py --ranks 4 --min 1024 --max 67108864 --factor 16 --json out.json
"""
import argparse
import json
import os
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def sizes(a):
    s = a.min
    while s <= a.max:
        yield s
        if a.factor <= 1:
            break
        s = int(s * a.factor)


def time_size(send, work, count, a):
    src, dst = send[:count], work[:count]
    for _ in range(a.warmup):
        dst.copy_(src)
        dist.all_reduce(dst)
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(a.iters):
        dst.copy_(src)  # out of place, as MPI_Allreduce(send, recv) and dtlab's library path
        dist.all_reduce(dst)
    slowest = torch.tensor([(time.perf_counter() - t0) / a.iters], dtype=torch.float64)
    dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
    return slowest.item()


def rank_main(rank, a):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=a.ranks)
    send = torch.ones(a.max // 4, dtype=torch.float32)
    work = torch.zeros_like(send)
    rows = []
    for size in sizes(a):
        count = size // 4
        t = time_size(send, work, count, a)
        busbw = count * 4 / t / 1e9 * 2 * (a.ranks - 1) / a.ranks
        rows.append({"bytes": count * 4, "inplace": False, "time_us": t * 1e6, "busbw_GBps": busbw})
    if rank == 0:
        with open(a.json, "w") as f:
            json.dump({"impl": "gloo", "backend": "torch " + torch.__version__, "ranks": a.ranks, "rows": rows}, f, indent=1)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--min", type=int, default=1024)
    p.add_argument("--max", type=int, default=64 << 20)
    p.add_argument("--factor", type=float, default=16)
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--port", type=int, default=29533)
    p.add_argument("--json", required=True)
    a = p.parse_args()
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ["MASTER_PORT"] = str(a.port)
    mp.spawn(rank_main, args=(a,), nprocs=a.ranks, join=True)


if __name__ == "__main__":
    main()
