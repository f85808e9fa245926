#!/usr/bin/env python3
"""Checks dtlab's GPT forward and backward against the same model in PyTorch 1.13:

    python3 tests/python/gpt_torch_check.py CHECKPOINT INPUTS_AND_GRADS [--float64]
    python3 tests/python/gpt_torch_check.py --self-test

CHECKPOINT        dtlab's parameters (safetensors, names in torch_gpt.py) with
                  __metadata__ "n_head" (or pass --heads)
INPUTS_AND_GRADS  tokens, targets (I32 [S, B]), dtlab's loss (F32 [1]), logits
                  (F32 [S*B, V], row s*B + b) and grad.<name> for every parameter

PyTorch runs forward and backward on the same tokens (float32, or float64 with --float64)
and the script prints, per tensor, the largest error of dtlab's values a against PyTorch's
b, relative to the tensor's largest magnitude:

    error = max_i |a_i - b_i| / max(|b_i|, floor * max_j |b_j|)     floor = 1 by default,
          = max_i |a_i - b_i| / max_j |b_j|                         i.e. normwise

Why normwise: two correct fp32 implementations that sum in different orders differ by
rounding that scales with the tensor's magnitude, not with each element's. Measured with
make_fake_gpt_files.py (PyTorch fp32 against the exact values rounded to fp32, h 16..128,
1..4 layers): normwise errors up to 5.1e-6; per-element errors with a floor of 1e-6 of the
max up to 0.33 and with 0.1 up to 5e-5, so an element-wise 1e-5 rejects correct code.
--floor 1e-3 (say) makes the check element-wise for debugging.
Exit 0 when every error is at most --tolerance (1e-5), 1 when
one is larger, 2 when the files do not describe this model. --self-test runs the check on
files PyTorch itself writes (make_fake_gpt_files.py): they must pass, and fail once one
gradient element is perturbed by 1e-3."""
import argparse
import os
import sys
import tempfile

try:
    import torch
except ImportError:  # ctest counts exit 77 as skipped
    print("skipped: this python3 has no torch (bash .ci/install-deps installs python3-torch)")
    sys.exit(77)

import safetensors_io
import torch_gpt


def relative_error(a, b, floor):
    a, b = a.double(), b.double()
    if b.numel() == 0:
        return 0.0
    scale = torch.clamp(b.abs(), min=floor * b.abs().max().item())
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))  # an all-zero b: absolute error
    return ((a - b).abs() / scale).max().item()


def reference(ckpt_path, io, heads, dtype):
    """PyTorch's loss, logits and gradients on dtlab's parameters and tokens."""
    params, meta = safetensors_io.load(ckpt_path)
    model = torch_gpt.Gpt(*torch_gpt.config_from_checkpoint(params, meta, heads)).to(dtype)
    missing, unexpected = model.load_state_dict({n: t.to(dtype) for n, t in params.items()}, strict=False)
    if missing or unexpected:
        raise ValueError(f"checkpoint does not match the GPT: missing {missing}, unexpected {unexpected}")
    loss, logits = model(io["tokens"], io["targets"])
    loss.backward()
    want = {"loss": loss.detach().reshape(1), "logits": logits.detach()}
    want.update({f"grad.{n}": p.grad for n, p in model.named_parameters()})
    return want


def check(ckpt_path, io_path, heads=None, float64=False, tolerance=1e-5, floor=1.0):
    io, _ = safetensors_io.load(io_path)
    try:
        want = reference(ckpt_path, io, heads, torch.float64 if float64 else torch.float32)
        absent = sorted(set(want) - set(io))
        if absent:
            raise ValueError(f"{io_path} lacks {absent}")
        for name, b in want.items():
            if io[name].shape != b.shape:
                raise ValueError(f"{name} is {list(io[name].shape)} in {io_path}, PyTorch's is {list(b.shape)}")
    except (ValueError, KeyError, RuntimeError) as e:
        print(f"gpt_torch_check: {e}")
        return 2
    worst = 0.0
    print(f"{'tensor':40s} {'shape':>14s}  max error   (tolerance {tolerance:g}, {'float64' if float64 else 'float32'})")
    for name, b in want.items():
        err = relative_error(io[name], b, floor)
        worst = max(worst, err)
        print(f"{name:40s} {str(list(b.shape)):>14s}  {err:.3e}{'   FAIL' if err > tolerance else ''}")
    print(f"worst {worst:.3e}: {'PASS' if worst <= tolerance else 'FAIL'}")
    return 0 if worst <= tolerance else 1


def self_test():
    import make_fake_gpt_files
    with tempfile.TemporaryDirectory() as d:
        good = make_fake_gpt_files.make_files(os.path.join(d, "good"))
        bad = make_fake_gpt_files.make_files(os.path.join(d, "bad"), perturb="grad.h.1.attn.c_attn.weight")
        passes, fails = check(*good), check(*bad)
    print(f"self-test: honest files -> exit {passes} (want 0), one perturbed gradient -> exit {fails} (want 1)")
    return 0 if (passes, fails) == (0, 1) else 1


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checkpoint", nargs="?")
    p.add_argument("inputs_and_grads", nargs="?")
    p.add_argument("--float64", action="store_true", help="run PyTorch in float64 (debugging)")
    p.add_argument("--heads", type=int, help="attention heads, when the checkpoint's metadata lacks n_head")
    p.add_argument("--tolerance", type=float, default=1e-5)
    p.add_argument("--floor", type=float, default=1.0, help="see the error's definition above")
    p.add_argument("--self-test", action="store_true")
    a = p.parse_args()
    if a.self_test:
        return self_test()
    if not a.inputs_and_grads:
        p.error("give CHECKPOINT and INPUTS_AND_GRADS, or --self-test")
    return check(a.checkpoint, a.inputs_and_grads, a.heads, a.float64, a.tolerance, a.floor)


if __name__ == "__main__":
    sys.exit(main())
