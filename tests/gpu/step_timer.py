"""The PyTorch peers' step timing, shared by pytorch_mlp_step.py and pytorch_gpt_step.py:
`warmup` untimed steps, then `steps` timed between two CUDA events (the GPU's own clock,
as dtlab's bench-step times its steps). Returns seconds per step."""
import torch


def seconds_per_step(step, warmup, steps):
    for _ in range(warmup):
        step()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(steps):
        step()
    stop.record()
    torch.cuda.synchronize()
    return start.elapsed_time(stop) / 1e3 / steps
