"""safetensors files with nothing but struct and json (PyTorch 1.13 as Debian ships it has
no `safetensors` module), written independently of dtlab's C++ reader and writer so each
checks the other.

    tensors, metadata = load("ckpt.safetensors")   # {name: torch.Tensor}, {str: str}
    save("out.safetensors", tensors, metadata)

Layout: 8-byte little-endian header length N, N bytes of JSON (padded with spaces to a
multiple of 8), then the raw little-endian tensor bytes at the header's data_offsets."""
import json
import struct

import torch

DTYPES = {
    "F32": torch.float32, "F64": torch.float64, "F16": torch.float16,
    "BF16": torch.bfloat16, "I32": torch.int32, "I64": torch.int64,
}
NAMES = {v: k for k, v in DTYPES.items()}


def load(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    data = blob[8 + n:]
    metadata = header.pop("__metadata__", {})
    tensors = {}
    for name, entry in header.items():
        begin, end = entry["data_offsets"]
        dtype = DTYPES[entry["dtype"]]
        raw = bytearray(data[begin:end])  # a copy: frombuffer wants a writable buffer
        flat = torch.frombuffer(raw, dtype=dtype) if raw else torch.empty(0, dtype=dtype)
        tensors[name] = flat.reshape(entry["shape"]).clone()
    return tensors, metadata


def save(path, tensors, metadata=None):
    """Writes the tensors in the dict's order (not sorted: a reader must not care)."""
    header, chunks, offset = {}, [], 0
    for name, t in tensors.items():
        t = t.detach().contiguous().cpu()
        raw = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
        header[name] = {"dtype": NAMES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for raw in chunks:
            f.write(raw)
