"""Times a training step of dtlab's tiny GPT written in PyTorch (tests/python/torch_gpt.py) on
the CPU: the peer of `bash bench/gpt_vs_torch.sh`. Prints one line per timed step: seconds.

  --adamw      the step includes AdamW (as `dtlab bench-step --model gpt` does); without it,
               forward + backward only (as the tensor-parallel lab's step time)
  --threads N  torch.set_num_threads(N) (default 1: dtlab's ranks run one BLAS thread each)
  --profile    instead of the times, PyTorch's profiler table over the timed steps: each op's
               self CPU time per step and its share, the peer of `dtlab bench-step --profile-ops`"""
import argparse
import os
import sys
import time

p = argparse.ArgumentParser()
for name, default in [("layers", 2), ("hidden", 256), ("heads", 4), ("seq", 256), ("batch", 8), ("vocab", 64),
                      ("steps", 5), ("threads", 1)]:
    p.add_argument("--" + name, type=int, default=default)
p.add_argument("--adamw", action="store_true")
p.add_argument("--profile", action="store_true")
a = p.parse_args()
# Debian's PyTorch calls the system BLAS (OpenBLAS) for its GEMMs, and torch.set_num_threads
# does not reach OpenBLAS' own thread pool: "1 thread" ran its GEMMs on every core (CPU time
# 1.99× the wall time on 2 cores, measured). OpenBLAS reads its thread count when loaded.
os.environ["OPENBLAS_NUM_THREADS"] = str(a.threads)
os.environ["OMP_NUM_THREADS"] = str(a.threads)
import torch  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "python"))
from torch_gpt import Gpt  # noqa: E402

torch.set_num_threads(a.threads)
torch.manual_seed(0)
model = Gpt(a.vocab, a.seq, a.hidden, a.heads, a.layers)
with torch.no_grad():
    for t in model.parameters():
        t.normal_(0, 0.02)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3) if a.adamw else None
tokens = torch.randint(0, a.vocab, (a.seq, a.batch))
targets = torch.randint(0, a.vocab, (a.seq, a.batch))


def step():
    model.zero_grad(set_to_none=False)
    loss, _ = model(tokens, targets)
    loss.backward()
    if opt:
        opt.step()


def profile_table():
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        start = time.perf_counter()
        for _ in range(a.steps):
            step()
        wall = (time.perf_counter() - start) / a.steps
    events = sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)
    print(f"per op (PyTorch {torch.__version__} profiler, self CPU time / {a.steps} steps; "
          f"a step took {wall * 1e3:.3f} ms under the profiler):")
    print(f"{'op':40s} {'calls/step':>10s} {'ms/step':>10s} {'share':>7s}")
    for e in events:
        ms = e.self_cpu_time_total / 1e3 / a.steps
        if ms < 0.005:
            break
        print(f"{e.key[:40]:40s} {e.count / a.steps:10.1f} {ms:10.3f} {100 * ms / 1e3 / wall:6.1f}%")


step()  # warms up (allocator, first-touch pages)
if a.profile:
    profile_table()
else:
    for _ in range(a.steps):
        t0 = time.perf_counter()
        step()
        print(f"{time.perf_counter() - t0:.6f}")
