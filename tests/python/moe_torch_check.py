#!/usr/bin/env python3
"""Checks dtlab's mixture-of-experts model (labs/experts/moe_model.h) against the same model
written here in PyTorch, in float64:

    python3 tests/python/moe_torch_check.py FILE [FILE ...] [--tolerance 1e-5]

FILE (safetensors, written by tests/labs/moe_torch_test.cpp) holds the inputs x and targets
[T, h], every parameter ("block L router" [E, h], "block L expert e w1" [f, h], "... b1" [f],
"... w2" [h, f], "... b2" [h]), dtlab's loss [1], its choices per block ("choice L": I32
[T*k], the expert of slot t*k+j or -1 where capacity dropped it) and grad.<name> of every
parameter; metadata: experts, top_k, capacity, groups, skew, aux_weight.

PyTorch routes on its own (softmax, a stable descending sort: ties to the lower expert,
capacity in GShard's order within each of the `groups` contiguous token groups), runs the
blocks x <- x + sum_kept w * expert(x), the loss mean((y - target)^2) + aux_weight * sum over
blocks of the load-balancing loss E * sum_e f_e * P_e (averaged over the groups), and
backward. Printed: the choices that differ (must be 0), the loss's relative error and each
gradient's normwise relative error max|a - b| / max|b|. Exit 0 when every file's are within
the tolerance, 1 otherwise, 77 (skipped) without torch. (Several files: one import of torch.)"""
import argparse
import os
import sys

try:
    import torch
except ImportError:
    print("skipped: this python3 has no torch (bash .ci/install-deps installs python3-torch)")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402


def route(probs, k, capacity):
    """One group's choices [T, k] and kept mask [T, k] (capacity: first choices first)."""
    order = torch.sort(probs, dim=1, descending=True, stable=True).indices[:, :k]
    kept = torch.zeros_like(order, dtype=torch.bool)
    used = [0] * probs.shape[1]
    for j in range(k):
        for t in range(probs.shape[0]):
            e = int(order[t, j])
            if used[e] < capacity:
                kept[t, j], used[e] = True, used[e] + 1
    return order, kept


def expert(p, layer, e, x):
    name = "block %d expert %d " % (layer, e)
    hidden = torch.nn.functional.gelu(x @ p[name + "w1"].T + p[name + "b1"], approximate="tanh")
    return hidden @ p[name + "w2"].T + p[name + "b2"]


def block(p, layer, x, meta, choices):
    E, k, G = int(meta["experts"]), int(meta["top_k"]), int(meta["groups"])
    skew = float(meta["skew"])
    bias = torch.tensor([skew * (E - 1 - e) / max(E - 1, 1) for e in range(E)], dtype=x.dtype)
    probs = torch.softmax(x @ p["block %d router" % layer].T + bias, dim=1)
    out, aux, per = x.clone(), 0.0, x.shape[0] // G
    for g in range(G):
        rows = slice(g * per, (g + 1) * per)
        order, kept = route(probs[rows].detach(), k, int(meta["capacity"]))
        choices.append(torch.where(kept, order, torch.full_like(order, -1)).reshape(-1))
        f = torch.bincount(order.reshape(-1), minlength=E).double() / (per * k)
        aux = aux + E * (f * probs[rows].mean(dim=0)).sum() / G
        for e in range(E):
            t, j = torch.nonzero((order == e) & kept, as_tuple=True)
            if len(t):
                w = probs[rows][t, e].unsqueeze(1)
                out = out.index_add(0, t + g * per, w * expert(p, layer, e, x[rows][t]))
    return out, aux


def check(path, tolerance):
    """Prints one file's comparison; True when it passes."""
    tensors, meta = safetensors_io.load(path)
    print("%s (%s):" % (os.path.basename(path), meta.get("case", "")))
    params = {n: t.double().requires_grad_() for n, t in tensors.items() if n.startswith("block ")}
    x, target = tensors["x"].double(), tensors["target"].double()
    choices, aux = [], 0.0
    for layer in range(int(meta["layers"])):
        x, block_aux = block(params, layer, x, meta, choices)
        aux = aux + block_aux
    loss = ((x - target) ** 2).mean() + float(meta["aux_weight"]) * aux
    loss.backward()
    worst, differing = 0.0, 0
    for layer in range(int(meta["layers"])):
        mine = torch.cat(choices[layer * int(meta["groups"]):(layer + 1) * int(meta["groups"])])
        differing += int((mine != tensors["choice %d" % layer].long()).sum())
    print("choices differing from PyTorch's: %d" % differing)
    rel = abs(float(tensors["loss"][0]) - loss.item()) / abs(loss.item())
    print("loss %.8f (PyTorch float64 %.8f): relative error %.2e" % (float(tensors["loss"][0]), loss.item(), rel))
    worst = rel
    for name, p in params.items():
        b = p.grad
        err = (tensors["grad." + name].double() - b).abs().max().item() / max(b.abs().max().item(), 1e-30)
        print("grad %-24s normwise relative error %.2e" % (name, err))
        worst = max(worst, err)
    print("largest error %.2e (tolerance %.0e)" % (worst, tolerance))
    return differing == 0 and worst <= tolerance


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("--tolerance", type=float, default=1e-5)
    a = ap.parse_args()
    passed = [check(path, a.tolerance) for path in a.files]
    return 0 if all(passed) else 1


if __name__ == "__main__":
    sys.exit(main())
