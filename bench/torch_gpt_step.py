"""Times forward + backward of dtlab's tiny GPT written in PyTorch (tests/python/torch_gpt.py)
on the CPU with one thread: the peer of `bash bench/gpt_vs_torch.sh`. Prints one line per
timed step: seconds."""
import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "python"))
from torch_gpt import Gpt  # noqa: E402

p = argparse.ArgumentParser()
for name, default in [("layers", 2), ("hidden", 256), ("heads", 4), ("seq", 256), ("batch", 8), ("vocab", 64),
                      ("steps", 5)]:
    p.add_argument("--" + name, type=int, default=default)
a = p.parse_args()
torch.set_num_threads(1)  # dtlab's ranks run one BLAS thread each: the same here
torch.manual_seed(0)
model = Gpt(a.vocab, a.seq, a.hidden, a.heads, a.layers)
with torch.no_grad():
    for t in model.parameters():
        t.normal_(0, 0.02)
tokens = torch.randint(0, a.vocab, (a.seq, a.batch))
targets = torch.randint(0, a.vocab, (a.seq, a.batch))
for step in range(a.steps + 1):  # step 0 warms up (allocator, first-touch pages)
    model.zero_grad(set_to_none=False)
    t0 = time.perf_counter()
    loss, _ = model(tokens, targets)
    loss.backward()
    if step > 0:
        print(f"{time.perf_counter() - t0:.6f}")
