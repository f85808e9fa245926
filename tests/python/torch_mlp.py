"""The labs' MLP in PyTorch, for the peers that time it (bench/torch_mlp_step.py,
bench/torch_ddp.py, tests/gpu/pytorch_mlp_step.py): `depth` Linear layers
64 -> width -> ... -> width -> 64 with tanh-GELU between them, as labs/train's Mlp."""
import torch


def make_mlp(width, depth, features=64):
    dims = [features] + [width] * (depth - 1) + [features]
    layers = []
    for i in range(depth):
        layers.append(torch.nn.Linear(dims[i], dims[i + 1]))
        if i + 1 < depth:
            layers.append(torch.nn.GELU(approximate="tanh"))
    return torch.nn.Sequential(*layers)
