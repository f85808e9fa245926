#!/usr/bin/env python3
"""Writes the two files gpt_torch_check.py reads, computed by PyTorch itself instead of
dtlab, so the check can be tested before (and without) the C++ GPT:

    python3 tests/python/make_fake_gpt_files.py OUT_DIR [--perturb grad.h.0.mlp.c_fc.weight]

OUT_DIR/checkpoint.safetensors  the parameters (F32) and __metadata__ {"n_head": ...}
OUT_DIR/grads.safetensors       tokens, targets (I32 [S, B]), loss (F32 [1]),
                                logits (F32 [S*B, V]) and grad.<name> for every parameter

The values are computed in float64 and rounded to float32, as an independent fp32
implementation (dtlab's) would be off from PyTorch's fp32 by rounding only. --perturb
scales the largest element of one tensor by (1 + 1e-3): the check must then fail."""
import argparse
import os
import sys

import torch

import safetensors_io
import torch_gpt


def random_parameters(model, generator):
    """Small random weights; LayerNorm weights near 1, so every path carries gradient."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=generator, dtype=torch.float64)
            value = 1.0 + 0.1 * noise if name.endswith(("ln_1.weight", "ln_2.weight", "ln_f.weight")) else 0.2 * noise
            p.copy_(value.float())  # the checkpoint holds float32: compute on exactly those values


def make_files(out_dir, vocab=64, seq=8, batch=3, hidden=16, heads=4, layers=2, seed=1, perturb=None):
    g = torch.Generator().manual_seed(seed)
    model = torch_gpt.Gpt(vocab, seq, hidden, heads, layers).double()
    random_parameters(model, g)
    tokens = torch.randint(0, vocab, (seq, batch), generator=g, dtype=torch.int32)
    targets = torch.randint(0, vocab, (seq, batch), generator=g, dtype=torch.int32)
    loss, logits = model(tokens, targets)
    loss.backward()
    params = {n: p.detach().float() for n, p in model.named_parameters()}
    meta = {"n_head": str(heads), "n_layer": str(layers), "written_by": "make_fake_gpt_files.py"}
    out = {"tokens": tokens, "targets": targets, "loss": loss.detach().float().reshape(1),
           "logits": logits.detach().float()}
    out.update({f"grad.{n}": p.grad.float() for n, p in model.named_parameters()})
    if perturb:
        flat = out[perturb].view(-1)
        flat[flat.abs().argmax()] *= 1 + 1e-3  # the largest element: a normwise error of 1e-3
    os.makedirs(out_dir, exist_ok=True)
    paths = (os.path.join(out_dir, "checkpoint.safetensors"), os.path.join(out_dir, "grads.safetensors"))
    safetensors_io.save(paths[0], params, meta)
    safetensors_io.save(paths[1], out)
    return paths


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out_dir")
    p.add_argument("--perturb", help="a tensor of the grads file to scale one element of, e.g. grad.wte")
    for name, default in (("vocab", 64), ("seq", 8), ("batch", 3), ("hidden", 16), ("heads", 4), ("layers", 2),
                          ("seed", 1)):
        p.add_argument(f"--{name}", type=int, default=default)
    a = p.parse_args()
    paths = make_files(a.out_dir, a.vocab, a.seq, a.batch, a.hidden, a.heads, a.layers, a.seed, a.perturb)
    print("wrote", *paths)
    return 0


if __name__ == "__main__":
    sys.exit(main())
