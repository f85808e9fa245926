#!/usr/bin/env python3
"""The same training step as `dtlab bench-step --device cuda`, in PyTorch eager: an MLP of
`depth` Linear layers (64 -> width -> ... -> width -> 64) with tanh-GELU between them, MSE
loss, AdamW (PyTorch's defaults: lr 1e-3, betas 0.9/0.999, eps 1e-8), fp32 without TF32
(PyTorch's default for matmuls, and cuBLAS's), the loss read back every step as dtlab does.
Prints step_ms and achieved_TFLOPs in dtlab's format so tests/gpu/run.sh can divide them."""
import argparse
import os
import sys

import torch

from step_timer import seconds_per_step  # beside this script (its folder is on sys.path)

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
from torch_mlp import make_mlp  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--width", type=int, default=4096)
    p.add_argument("--depth", type=int, default=8)
    p.add_argument("--batch", type=int, default=4096)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    a = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    model = make_mlp(a.width, a.depth).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0)
    x = torch.randn(a.batch, 64, device="cuda")
    y = torch.randn(a.batch, 64, device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    step_s = seconds_per_step(step, a.warmup, a.steps)
    macs = sum(l.in_features * l.out_features for l in model if isinstance(l, torch.nn.Linear))
    print(f"pytorch {torch.__version__}  width {a.width}  depth {a.depth}  batch {a.batch}")
    print(f"step_ms {step_s * 1e3:.3f}")
    print(f"achieved_TFLOPs {6 * macs * a.batch / step_s / 1e12:.2f}")


if __name__ == "__main__":
    main()
