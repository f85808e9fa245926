"""dtlab's tiny GPT, written again in plain PyTorch 1.13 as the reference its C++ forward and
backward are checked against (gpt_torch_check.py). Parameter names are dtlab's, so a dtlab
checkpoint loads with load_state_dict:

    wte [V, h]  wpe [S, h]  ln_f.{weight,bias} [h]
    h.{i}.ln_1.{weight,bias}  h.{i}.attn.c_attn.{weight [3h, h], bias [3h]}   (rows: Q, K, V)
    h.{i}.attn.c_proj.{weight [h, h], bias}  h.{i}.ln_2.{weight,bias}
    h.{i}.mlp.c_fc.{weight [4h, h], bias [4h]}  h.{i}.mlp.c_proj.{weight [h, 4h], bias [h]}

GPT-2 style: pre-LayerNorm (eps 1e-5), causal attention with A heads scaled by
1/sqrt(h/A), tanh-approximated GELU, LM head tied to wte, mean cross-entropy over tokens.
Tokens come as [S, B]; logits as [S*B, V] with row s*B + b, dtlab's order."""
import math

import torch
import torch.nn.functional as F
from torch import nn


class Attention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(hidden, 3 * hidden)
        self.c_proj = nn.Linear(hidden, hidden)

    def forward(self, x):  # x [B, S, h]
        B, S, h = x.shape
        d = h // self.heads
        q, k, v = self.c_attn(x).split(h, dim=2)
        q, k, v = (t.reshape(B, S, self.heads, d).transpose(1, 2) for t in (q, k, v))  # [B, A, S, d]
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(d)
        causal = torch.tril(torch.ones(S, S, dtype=torch.bool, device=x.device))
        scores = scores.masked_fill(~causal, float("-inf"))
        y = F.softmax(scores, dim=-1) @ v  # [B, A, S, d]
        return self.c_proj(y.transpose(1, 2).reshape(B, S, h))


class Mlp(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.c_fc = nn.Linear(hidden, 4 * hidden)
        self.c_proj = nn.Linear(4 * hidden, hidden)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.ln_1 = nn.LayerNorm(hidden, eps=1e-5)
        self.attn = Attention(hidden, heads)
        self.ln_2 = nn.LayerNorm(hidden, eps=1e-5)
        self.mlp = Mlp(hidden)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class Gpt(nn.Module):
    def __init__(self, vocab, max_seq, hidden, heads, layers):
        super().__init__()
        assert hidden % heads == 0, f"hidden {hidden} is not a multiple of heads {heads}"
        self.wte = nn.Parameter(torch.zeros(vocab, hidden))
        self.wpe = nn.Parameter(torch.zeros(max_seq, hidden))
        self.h = nn.ModuleList(Block(hidden, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(hidden, eps=1e-5)

    def forward(self, tokens, targets):
        """tokens, targets: int [S, B]. Returns (mean loss, logits [S*B, V])."""
        S, B = tokens.shape
        x = self.wte[tokens.long()] + self.wpe[:S].unsqueeze(1)  # [S, B, h]
        x = x.transpose(0, 1)  # attention runs along S for each sequence b
        for block in self.h:
            x = block(x)
        x = self.ln_f(x).transpose(0, 1).reshape(S * B, -1)  # row s*B + b
        logits = x @ self.wte.t()
        return F.cross_entropy(logits, targets.reshape(-1).long()), logits


def config_from_checkpoint(tensors, metadata, heads=None):
    """(vocab, max_seq, hidden, heads, layers) from the shapes and __metadata__["n_head"]:
    the head count is the one thing the shapes do not say."""
    vocab, hidden = tensors["wte"].shape
    max_seq = tensors["wpe"].shape[0]
    layers = 0
    while f"h.{layers}.ln_1.weight" in tensors:
        layers += 1
    if heads is None:
        if "n_head" not in metadata:
            raise ValueError('the checkpoint has no __metadata__ "n_head"; pass --heads')
        heads = int(metadata["n_head"])
    return vocab, max_seq, hidden, heads, layers
