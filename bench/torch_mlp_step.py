"""The MLP training step of `dtlab bench-step --model mlp` in PyTorch on the CPU, the peer of
`bash bench/gpt_vs_torch.sh --mlp`: depth Linear layers (64 -> width -> ... -> width -> 64)
with tanh-GELU between them, MSE loss, AdamW (lr 1e-3, betas 0.9/0.999, eps 1e-8, no weight
decay), the loss read back every step as dtlab does. Prints one line per timed step: seconds."""
import argparse
import os
import sys
import time

p = argparse.ArgumentParser()
for name, default in [("width", 1024), ("depth", 4), ("batch", 512), ("steps", 7), ("threads", 1)]:
    p.add_argument("--" + name, type=int, default=default)
a = p.parse_args()
# torch.set_num_threads does not reach the OpenBLAS Debian's PyTorch calls (torch_gpt_step.py).
os.environ["OPENBLAS_NUM_THREADS"] = str(a.threads)
os.environ["OMP_NUM_THREADS"] = str(a.threads)
import torch  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "python"))
from torch_mlp import make_mlp  # noqa: E402

torch.set_num_threads(a.threads)
torch.manual_seed(0)
model = make_mlp(a.width, a.depth)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0)
x, y = torch.randn(a.batch, 64), torch.randn(a.batch, 64)


def step():
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    return loss.item()


step()  # warms up (allocator, first-touch pages)
for _ in range(a.steps):
    t0 = time.perf_counter()
    step()
    print(f"{time.perf_counter() - t0:.6f}")
