#!/usr/bin/python3
"""Writes the PyTorch reference the CPU GPT-2 stage is tested against (tests/exec/test_reference.cpp).

A small GPT-2 (L=2, C=48, NH=4, maxT=32, V=100 so Vp=128) with random parameters from a fixed
torch seed, one batch (B=2, T=16) of random tokens and targets; the forward and backward run in
float64 and are stored as float32. Outputs, next to this script:
  params.bin     llm.c checkpoint: 256 int32 header (magic 20240326, version 3, maxT, V, L, NH,
                 C, Vp), then the 16 tensors in checkpoint order as float32 (wte pad rows zero).
  reference.bin  int32[8] (B, T, L, C, NH, V, Vp, maxT), x int32[B*T], y int32[B*T],
                 loss float32, logits float32[B*T*Vp], gradients float32[P] in llm.c order.
Run: /usr/bin/python3 tests/exec/reference/make_reference.py (any python3 with torch >= 1.12).
"""
import math
import os
import struct

import torch
import torch.nn.functional as F

B, T = 2, 16
L, C, NH, MAXT, V = 2, 48, 4, 32, 100
VP = (V + 127) // 128 * 128
HERE = os.path.dirname(os.path.abspath(__file__))


def make_params(gen):
    def normal(*shape, std):
        return torch.randn(*shape, generator=gen, dtype=torch.float64) * std

    wte = normal(VP, C, std=0.1)
    wte[V:] = 0.0  # llm.c's pad rows
    # Non-trivial LayerNorm weights and biases everywhere, so their gradients are exercised.
    return [
        ("wte", wte),
        ("wpe", normal(MAXT, C, std=0.1)),
        ("ln1w", 1.0 + normal(L, C, std=0.1)),
        ("ln1b", normal(L, C, std=0.05)),
        ("qkvw", normal(L, 3 * C, C, std=0.1)),
        ("qkvb", normal(L, 3 * C, std=0.05)),
        ("attprojw", normal(L, C, C, std=0.1)),
        ("attprojb", normal(L, C, std=0.05)),
        ("ln2w", 1.0 + normal(L, C, std=0.1)),
        ("ln2b", normal(L, C, std=0.05)),
        ("fcw", normal(L, 4 * C, C, std=0.1)),
        ("fcb", normal(L, 4 * C, std=0.05)),
        ("fcprojw", normal(L, C, 4 * C, std=0.1)),
        ("fcprojb", normal(L, C, std=0.05)),
        ("lnfw", 1.0 + normal(C, std=0.1)),
        ("lnfb", normal(C, std=0.05)),
    ]


def gpt2_forward(p, x, y):
    hd = C // NH
    h = p["wte"][x] + p["wpe"][:T]
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    for l in range(L):
        ln1 = F.layer_norm(h, (C,), p["ln1w"][l], p["ln1b"][l], eps=1e-5)
        qkv = ln1 @ p["qkvw"][l].T + p["qkvb"][l]
        q, k, v = (z.view(B, T, NH, hd).transpose(1, 2) for z in qkv.split(C, dim=-1))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hd)
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        a = (att @ v).transpose(1, 2).reshape(B, T, C)
        h = h + a @ p["attprojw"][l].T + p["attprojb"][l]
        ln2 = F.layer_norm(h, (C,), p["ln2w"][l], p["ln2b"][l], eps=1e-5)
        f = F.gelu(ln2 @ p["fcw"][l].T + p["fcb"][l], approximate="tanh")
        h = h + f @ p["fcprojw"][l].T + p["fcprojb"][l]
    lnf = F.layer_norm(h, (C,), p["lnfw"], p["lnfb"], eps=1e-5)
    logits = lnf @ p["wte"].T  # (B, T, Vp); the padded columns take no part in the loss
    loss = F.cross_entropy(logits[..., :V].reshape(-1, V), y.reshape(-1))
    return logits, loss


def f32(t):
    return t.detach().to(torch.float32).contiguous().numpy().tobytes()


def main():
    gen = torch.Generator().manual_seed(20240326)
    named = make_params(gen)
    x = torch.randint(0, V, (B, T), generator=gen)
    y = torch.randint(0, V, (B, T), generator=gen)
    params = {name: t.clone().requires_grad_(True) for name, t in named}
    logits, loss = gpt2_forward(params, x, y)
    loss.backward()

    header = [0] * 256
    header[:8] = [20240326, 3, MAXT, V, L, NH, C, VP]
    with open(os.path.join(HERE, "params.bin"), "wb") as out:
        out.write(struct.pack("<256i", *header))
        for name, _ in named:
            out.write(f32(params[name].reshape(-1)))
    with open(os.path.join(HERE, "reference.bin"), "wb") as out:
        out.write(struct.pack("<8i", B, T, L, C, NH, V, VP, MAXT))
        out.write(x.to(torch.int32).numpy().tobytes())
        out.write(y.to(torch.int32).numpy().tobytes())
        out.write(struct.pack("<f", loss.item()))
        out.write(f32(logits.reshape(-1)))
        for name, _ in named:
            out.write(f32(params[name].grad.reshape(-1)))
    print(f"loss {loss.item():.6f}; wrote params.bin and reference.bin to {HERE}")


if __name__ == "__main__":
    main()
