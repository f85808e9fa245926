#!/usr/bin/env python3
"""Records the torch.profiler traces of a small PyTorch DDP run (gloo, CPU), one Chrome
trace per rank, whose exposed communication is known by construction: with
--slow-rank R --sleep-ms S, rank R sleeps S ms in each step's compute (after the forward,
before the backward), so every other rank waits about S ms per step in the gradients'
all-reduce. `dtlab analyze DIR` (labs/cli/analyze_command.cpp) should find those S ms.

  /usr/bin/python3 tests/python/record_ddp_traces.py --ranks 2 --slow-rank 1 --sleep-ms 30 \
      --steps 4 --annotate --out /tmp/ddp_traces

Writes DIR/rank<r>.json for each rank and DIR/run.json (what was built in: ranks, steps,
slow rank, sleep), which the tests read. --annotate wraps each step in
record_function("train_step"); --profiler-steps drives torch.profiler with a schedule and
profiler.step(), which adds PyTorch's own ProfilerStep#N span around each step. Both are
containers: an analysis that counts them as compute would hide the wait.
Exits 77 (ctest's skip) when torch or its gloo backend is missing.
"""
import argparse
import json
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one BLAS thread per rank on a 2-core machine
try:
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
    from torch.nn.parallel import DistributedDataParallel as DDP
except ImportError as e:
    print(f"skip: torch is not importable ({e}); Debian's python3-torch provides it", file=sys.stderr)
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_mlp import make_mlp  # noqa: E402


def train_step(model, opt, x, y, rank, a):
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.mse_loss(model(x), y)
    if rank == a.slow_rank:
        time.sleep(a.sleep_ms / 1000.0)  # the built-in delay: the peers wait for it in the all-reduce
    loss.backward()
    opt.step()


# gloo's worker thread closes its all_reduce span just after the waiting main thread wakes:
# a profiler stopped at once can lose the last step's span on one rank (seen 3 times in about 60
# runs). The ranks pause this long before the profiler stops (idle at the end of the window).
SETTLE_S = 0.05


def profiled_steps(model, opt, x, y, rank, a, path):
    """Profiles a.steps steps and writes rank's trace to path."""
    def step():
        if a.annotate:
            with torch.profiler.record_function("train_step"):
                train_step(model, opt, x, y, rank, a)
        else:
            train_step(model, opt, x, y, rank, a)

    kwargs = {"activities": [torch.profiler.ProfilerActivity.CPU], "record_shapes": False}
    if not a.profiler_steps:
        with torch.profiler.profile(**kwargs) as prof:
            for _ in range(a.steps):
                step()
            time.sleep(SETTLE_S)
        prof.export_chrome_trace(path)
        return
    # A schedule makes profiler.step() open a ProfilerStep#N span around each step; the
    # trace is written when the schedule's active steps end (in the last prof.step()).
    kwargs["schedule"] = torch.profiler.schedule(wait=0, warmup=0, active=a.steps, repeat=1)
    kwargs["on_trace_ready"] = lambda done: done.export_chrome_trace(path)
    with torch.profiler.profile(**kwargs) as prof:
        for i in range(a.steps):
            step()
            if i == a.steps - 1:
                time.sleep(SETTLE_S)
            prof.step()


def rank_main(rank, a):
    torch.set_num_threads(1)
    torch.manual_seed(0)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{a.port}", rank=rank, world_size=a.ranks)
    model = DDP(make_mlp(a.width, a.depth), bucket_cap_mb=a.bucket_mb)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x, y = torch.randn(a.rows, 64), torch.randn(a.rows, 64)
    for _ in range(2):  # warm-up: DDP rebuilds its buckets after the first step
        train_step(model, opt, x, y, -1, a)
    dist.barrier()
    profiled_steps(model, opt, x, y, rank, a, os.path.join(a.out, f"rank{rank}.json"))
    dist.barrier()
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--steps", type=int, default=4, help="profiled steps")
    p.add_argument("--slow-rank", type=int, default=-1, help="the rank that sleeps (-1: none)")
    p.add_argument("--sleep-ms", type=float, default=0.0)
    p.add_argument("--annotate", action="store_true", help='record_function("train_step") around each step')
    p.add_argument("--profiler-steps", action="store_true", help="ProfilerStep#N spans from profiler.step()")
    p.add_argument("--width", type=int, default=64)
    p.add_argument("--depth", type=int, default=2)
    p.add_argument("--rows", type=int, default=16, help="rows of the batch on each rank")
    p.add_argument("--bucket-mb", type=float, default=25.0)
    p.add_argument("--port", type=int, default=0, help="the rendezvous port (0: a free one)")
    p.add_argument("--out", required=True, help="the folder for rank<r>.json and run.json")
    a = p.parse_args()
    if not 2 <= a.ranks <= 8:
        p.error("--ranks must be 2..8 (one process per rank)")
    if a.slow_rank >= a.ranks or (a.slow_rank >= 0) != (a.sleep_ms > 0):
        p.error("--slow-rank R and --sleep-ms S > 0 go together, with R < --ranks")
    if not dist.is_available() or not dist.is_gloo_available():
        print("skip: this torch has no gloo backend", file=sys.stderr)
        sys.exit(77)
    if a.port == 0:
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            a.port = s.getsockname()[1]
    os.makedirs(a.out, exist_ok=True)
    # fork, not spawn: the ranks inherit the imported torch (spawn imports it again in each, seconds)
    mp.start_processes(rank_main, args=(a,), nprocs=a.ranks, join=True, start_method="fork")
    built_in = {"ranks": a.ranks, "steps": a.steps, "slow_rank": a.slow_rank, "sleep_ms": a.sleep_ms,
                "annotate": a.annotate, "profiler_steps": a.profiler_steps}
    with open(os.path.join(a.out, "run.json"), "w") as f:
        json.dump(built_in, f, indent=1)


if __name__ == "__main__":
    main()
