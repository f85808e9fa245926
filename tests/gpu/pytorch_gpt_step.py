#!/usr/bin/env python3
"""The same training step as `dtlab bench-step --model gpt --device cuda`, in PyTorch eager:
the GPT-2 of labs/train/gpt.h (token + position embeddings, pre-LayerNorm blocks with causal
multi-head attention and a tanh-GELU MLP, ln_f, an LM head tied to the token embedding),
mean softmax cross-entropy, AdamW (PyTorch's defaults: lr 1e-3, betas 0.9/0.999, eps 1e-8,
no weight decay), fp32 without TF32 (the default for matmuls, and cuBLAS's), the loss read
back every step as dtlab does. Attention is written out (Q·Kᵀ, mask, softmax, ·V), the
algorithm dtlab's kernels run, as nanoGPT's non-flash path; the fused flash kernel
(scaled_dot_product_attention) is a different algorithm and is printed for reference only.
Prints step_ms and achieved_TFLOPs in dtlab's format so tests/gpu/run.sh can divide them."""
import argparse
import math

import torch
import torch.nn.functional as F

from step_timer import seconds_per_step  # beside this script (its folder is on sys.path)


class Block(torch.nn.Module):
    def __init__(self, h, heads, flash):
        super().__init__()
        self.heads, self.flash = heads, flash
        self.ln_1, self.ln_2 = torch.nn.LayerNorm(h), torch.nn.LayerNorm(h)
        self.c_attn, self.attn_proj = torch.nn.Linear(h, 3 * h), torch.nn.Linear(h, h)
        self.c_fc, self.mlp_proj = torch.nn.Linear(h, 4 * h), torch.nn.Linear(4 * h, h)

    def attention(self, x):
        B, S, h = x.shape
        q, k, v = self.c_attn(x).split(h, dim=2)
        q, k, v = (t.view(B, S, self.heads, h // self.heads).transpose(1, 2) for t in (q, k, v))
        if self.flash:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
            mask = torch.ones(S, S, device=x.device, dtype=torch.bool).tril()
            att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
            y = att @ v
        return self.attn_proj(y.transpose(1, 2).contiguous().view(B, S, h))

    def forward(self, x):
        x = x + self.attention(self.ln_1(x))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class Gpt(torch.nn.Module):
    def __init__(self, a, flash):
        super().__init__()
        self.wte, self.wpe = torch.nn.Embedding(a.vocab, a.hidden), torch.nn.Embedding(a.seq, a.hidden)
        self.blocks = torch.nn.ModuleList(Block(a.hidden, a.heads, flash) for _ in range(a.layers))
        self.ln_f = torch.nn.LayerNorm(a.hidden)

    def forward(self, tokens, targets):
        x = self.wte(tokens) + self.wpe(torch.arange(tokens.size(1), device=tokens.device))
        for b in self.blocks:
            x = b(x)
        logits = self.ln_f(x) @ self.wte.weight.t()  # the tied head
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def time_step(a, flash):
    torch.manual_seed(7)
    model = Gpt(a, flash).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0)
    tokens = torch.randint(0, a.vocab, (a.batch, a.seq), device="cuda")
    targets = torch.roll(tokens, -1, dims=1)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = model(tokens, targets)
        loss.backward()
        opt.step()
        return loss.item()

    return seconds_per_step(step, a.warmup, a.steps)


def main():
    p = argparse.ArgumentParser()
    for name, default in (("layers", 12), ("hidden", 768), ("heads", 12), ("seq", 512), ("batch", 8),
                          ("vocab", 32768), ("steps", 20), ("warmup", 3)):
        p.add_argument("--" + name, type=int, default=default)
    a = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    h, L = a.hidden, a.layers
    flops = (6 * (L * 12 * h * h + a.vocab * h) + 12 * L * h * a.seq) * a.batch * a.seq  # as dtlab counts
    step_s = time_step(a, flash=False)
    print(f"pytorch {torch.__version__}  gpt layers {L}  hidden {h}  heads {a.heads}  seq {a.seq}  batch {a.batch}"
          f"  vocab {a.vocab}")
    print(f"step_ms {step_s * 1e3:.3f}")
    print(f"achieved_TFLOPs {flops / step_s / 1e12:.2f}")
    print(f"flash_attention_step_ms {time_step(a, flash=True) * 1e3:.3f}  (scaled_dot_product_attention, for reference)")


if __name__ == "__main__":
    main()
