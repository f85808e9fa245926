#!/usr/bin/env python3
"""The other half of tests/core/safetensors_test.cpp's cross-check with PyTorch:

    python3 tests/python/safetensors_cross_check.py FROM_DTLAB FOR_DTLAB

checks that FROM_DTLAB (written by dtlab's write_safetensors) holds exactly the tensors the
C++ test put there, then writes FOR_DTLAB from torch tensors for dtlab to read back.
Exit 0 when every check passed; otherwise it prints what differed and exits 1."""
import sys

import torch

import safetensors_io


def expected_from_dtlab():
    """What SafeTensorsPython.DtlabFileReadsInTorchAndBack writes (keep the two in step)."""
    return {
        "w": torch.arange(6, dtype=torch.float32).reshape(2, 3) * 0.5 - 1.0,
        "ids": torch.tensor([-2, 0, 7, 2**31 - 1], dtype=torch.int32),
        "half": torch.tensor([1.0, -2.5, 3.140625], dtype=torch.bfloat16),
        "d": torch.tensor([1.0 / 3.0, -1e300], dtype=torch.float64),
        "empty": torch.zeros(0, 4, dtype=torch.float32),
    }


def for_dtlab():
    """What the C++ test expects back (keep in step with it too)."""
    return {
        "x": torch.arange(6, dtype=torch.float32).reshape(3, 2) / 4 - 0.5,
        "y": torch.tensor([[1.0, -0.5], [2.75, 1000.0]], dtype=torch.bfloat16),
        "z": torch.tensor([1, -1, 2**40], dtype=torch.int64),
        "e": torch.tensor([0.5, -65504.0], dtype=torch.float16),
    }


def main():
    got, metadata = safetensors_io.load(sys.argv[1])
    want = expected_from_dtlab()
    failures = []
    if sorted(got) != sorted(want):
        failures.append(f"names {sorted(got)} != {sorted(want)}")
    for name, w in want.items():
        g = got.get(name)
        if g is None or g.dtype != w.dtype or g.shape != w.shape or not torch.equal(g, w):
            failures.append(f"{name}: got {g!r}, want {w!r}")
    if metadata != {"format": "pt", "step": "7"}:
        failures.append(f"metadata {metadata}")
    for f in failures:
        print("cross-check:", f)
    safetensors_io.save(sys.argv[2], for_dtlab(), {"written_by": f"torch {torch.__version__}"})
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
