#!/usr/bin/env python3
"""A PyTorch reference of fabtrain-exec's training, for the GPU check (run-gpu-check.sh).

It trains the same llm.c model checkpoint on the same data windows, in the same order, with the
same step as fabtrain-exec's trainer (dp=1, one rank): GPT-2 with LayerNorm eps 1e-5, GELU
(tanh), causal attention, the output layer tied to wte and the loss over the unpadded
vocabulary; the global gradient norm clipped; AdamW in llm.c's order of operations (decay on the
2-D weights and wpe); llm.c's learning-rate schedule (linear warm-up, cosine to a fraction). It
writes a run record of JSON lines ({"type": "step", "step", "loss", "lr", "grad_norm"}) that
gpu-losses.py compares with fabtrain-exec's.

  gpt2-reference.py train CHECKPOINT DATA BATCH SEQ STEPS RECORD.jsonl [options]
      options: --lr 1e-3 --warmup 0 --lr-min-fraction 0.1 --weight-decay 0.1 --grad-clip 1.0
               --seed 1337 --device cuda
  gpt2-reference.py describe CHECKPOINT
      the checkpoint's header and tensor shapes (needs no PyTorch): checks the file's layout.
  gpt2-reference.py order WINDOWS SEED EPOCH
      the data loader's order of WINDOWS windows in that epoch (needs no PyTorch).

Reading the checkpoint and the data needs only the standard library; training needs PyTorch.
Not here: data-parallel or pipelined plans, mixed precision (fp32 products, TF32 off).
"""
import argparse
import array
import json
import math
import struct
import sys

MODEL_MAGIC, MODEL_VERSION_FP32 = 20240326, 3
TOKENS_MAGIC = 20240520
HEADER_INTS = 256
# llm.c's parameter tensors in file order (exec/model/kernels_layout.hpp), and which decay.
TENSORS = ["wte", "wpe", "ln1w", "ln1b", "qkvw", "qkvb", "attprojw", "attprojb",
           "ln2w", "ln2b", "fcw", "fcb", "fcprojw", "fcprojb", "lnfw", "lnfb"]
DECAYED = {"wte", "wpe", "qkvw", "attprojw", "fcw", "fcprojw"}


class FormatError(Exception):
    pass


def tensor_shapes(maxT, Vp, L, C):
    return {"wte": (Vp, C), "wpe": (maxT, C), "ln1w": (L, C), "ln1b": (L, C),
            "qkvw": (L, 3 * C, C), "qkvb": (L, 3 * C), "attprojw": (L, C, C),
            "attprojb": (L, C), "ln2w": (L, C), "ln2b": (L, C), "fcw": (L, 4 * C, C),
            "fcb": (L, 4 * C), "fcprojw": (L, C, 4 * C), "fcprojb": (L, C), "lnfw": (C,),
            "lnfb": (C,)}


def read_checkpoint(path):
    """(config, {name: (shape, array of float32)}) of an llm.c fp32 model file."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 4 * HEADER_INTS:
        raise FormatError(f"{path}: {len(blob)} bytes, shorter than the 1024-byte header")
    header = struct.unpack_from(f"<{HEADER_INTS}i", blob)
    if header[0] != MODEL_MAGIC:
        raise FormatError(f"{path}: magic {header[0]}, expected {MODEL_MAGIC} (llm.c model file)")
    if header[1] != MODEL_VERSION_FP32:
        raise FormatError(f"{path}: version {header[1]}, expected {MODEL_VERSION_FP32} (fp32)")
    maxT, V, L, NH, C, Vp = header[2:8]
    if min(maxT, V, L, NH, C, Vp) <= 0 or Vp < V or C % NH:
        raise FormatError(f"{path}: header maxT={maxT} V={V} L={L} NH={NH} C={C} Vp={Vp} "
                          "is not a GPT-2")
    shapes = tensor_shapes(maxT, Vp, L, C)
    total = sum(math.prod(shapes[name]) for name in TENSORS)
    expected = 4 * HEADER_INTS + 4 * total
    if len(blob) != expected:
        raise FormatError(f"{path}: {len(blob)} bytes, expected {expected} for "
                          f"{total} parameters of L={L} C={C} Vp={Vp} maxT={maxT}")
    values = array.array("f")
    values.frombytes(blob[4 * HEADER_INTS:])
    if sys.byteorder != "little":
        values.byteswap()
    tensors, at = {}, 0
    for name in TENSORS:
        n = math.prod(shapes[name])
        tensors[name] = (shapes[name], values[at:at + n])
        at += n
    config = {"maxT": maxT, "V": V, "L": L, "NH": NH, "C": C, "Vp": Vp}
    return config, tensors


def read_tokens(path):
    """The tokens of one data file: an llm.c token shard, or any other file as bytes."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) >= 1024 and struct.unpack_from("<i", blob)[0] == TOKENS_MAGIC:
        version, n = struct.unpack_from("<2i", blob, 4)
        if version != 1 or len(blob) != 1024 + 2 * n:
            raise FormatError(f"{path}: llm.c token file of version {version}, {n} tokens, "
                              f"but {len(blob)} bytes")
        tokens = array.array("H")
        tokens.frombytes(blob[1024:])
        if sys.byteorder != "little":
            tokens.byteswap()
        return list(tokens)
    if path.endswith(".bin"):
        raise FormatError(f"{path}: a .bin without the llm.c token magic {TOKENS_MAGIC}")
    return list(blob)


MASK64 = (1 << 64) - 1


def shuffled_order(n, seed, epoch):
    """The data loader's permutation (exec/run/data_loader.cpp): Fisher-Yates on splitmix64."""
    order = list(range(n))
    state = (seed * 0x2545F4914F6CDD1D + epoch + 1) & MASK64
    for i in range(n - 1, 0, -1):
        state = (state + 0x9E3779B97F4A7C15) & MASK64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        j = (z ^ (z >> 31)) % (i + 1)
        order[i], order[j] = order[j], order[i]
    return order


class Windows:
    """Windows of seq+1 tokens that never cross a file's end, taken in a per-epoch order."""

    def __init__(self, files, seq, seed):
        self.seq, self.seed = seq, seed
        self.tokens = [read_tokens(path) for path in files]
        self.windows = [(f, start) for f, tokens in enumerate(self.tokens)
                        for start in range(0, len(tokens) - seq, seq)]
        if not self.windows:
            raise FormatError(f"{files}: fewer than one window of {seq}+1 tokens")
        self.epoch, self.order = -1, None

    def sequence(self, g):
        n = len(self.windows)
        if g // n != self.epoch:
            self.epoch, self.order = g // n, shuffled_order(n, self.seed, g // n)
        f, start = self.windows[self.order[g % n]]
        return self.tokens[f][start:start + self.seq + 1]


def learning_rate(step, max_lr, warmup, total_steps, min_fraction):
    """exec/model/lr_schedule.cpp."""
    if step < warmup:
        return max_lr * (step + 1) / warmup
    decay_steps = total_steps - warmup
    if decay_steps <= 1:
        return max_lr
    ratio = min(1.0, (step - warmup) / (decay_steps - 1))
    min_lr = max_lr * min_fraction
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (max_lr - min_lr)


def train(args):
    import torch
    import torch.nn.functional as F

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = torch.device(args.device)
    config, tensors = read_checkpoint(args.checkpoint)
    V, L, NH, C = config["V"], config["L"], config["NH"], config["C"]
    if args.seq > config["maxT"]:
        raise FormatError(f"--seq {args.seq} exceeds the checkpoint's context {config['maxT']}")
    params = {name: torch.frombuffer(bytearray(values.tobytes()), dtype=torch.float32)
              .reshape(shape).to(device).requires_grad_(True)
              for name, (shape, values) in tensors.items()}
    moments = {name: (torch.zeros_like(p), torch.zeros_like(p)) for name, p in params.items()}
    data = Windows(args.data, args.seq, args.seed)
    B, T = args.batch, args.seq

    def layer_norm(x, w, b):
        return F.layer_norm(x, (C,), w, b, eps=1e-5)

    def loss_of(x, y):
        p = params
        h = p["wte"][x] + p["wpe"][:T]
        for l in range(L):
            a = layer_norm(h, p["ln1w"][l], p["ln1b"][l])
            q, k, v = (a @ p["qkvw"][l].T + p["qkvb"][l]).split(C, dim=-1)
            q, k, v = (t.view(B, T, NH, C // NH).transpose(1, 2) for t in (q, k, v))
            att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            att = att.transpose(1, 2).reshape(B, T, C)
            h = h + att @ p["attprojw"][l].T + p["attprojb"][l]
            m = layer_norm(h, p["ln2w"][l], p["ln2b"][l])
            m = F.gelu(m @ p["fcw"][l].T + p["fcb"][l], approximate="tanh")
            h = h + m @ p["fcprojw"][l].T + p["fcprojb"][l]
        h = layer_norm(h, p["lnfw"], p["lnfb"])
        logits = h @ p["wte"][:V].T
        return F.cross_entropy(logits.reshape(-1, V), y.reshape(-1))

    b1, b2, eps = 0.9, 0.95, 1e-8
    with open(args.record, "w") as record:
        for step in range(args.steps):
            rows = [data.sequence(step * B + i) for i in range(B)]
            batch = torch.tensor(rows, dtype=torch.long, device=device)
            loss = loss_of(batch[:, :-1], batch[:, 1:])
            for p in params.values():
                p.grad = None
            loss.backward()
            with torch.no_grad():
                norm = math.sqrt(sum(float((p.grad.double() ** 2).sum()) for p in params.values()))
                clip = args.grad_clip / norm if args.grad_clip > 0 and norm > args.grad_clip else 1.0
                lr = learning_rate(step, args.lr, args.warmup, args.steps, args.lr_min_fraction)
                t = step + 1
                step_size, inv_sqrt_c2 = lr / (1 - b1 ** t), 1 / math.sqrt(1 - b2 ** t)
                for name, p in params.items():
                    g, (m, v) = p.grad * clip, moments[name]
                    m.mul_(b1).add_((1 - b1) * g)
                    v.mul_(b2).add_((1 - b2) * g * g)
                    decay = lr * args.weight_decay if name in DECAYED else 0.0
                    p.sub_(step_size * m / (v.sqrt() * inv_sqrt_c2 + eps) + decay * p)
            row = {"type": "step", "step": t, "loss": float(loss), "lr": lr, "grad_norm": norm}
            record.write(json.dumps(row) + "\n")
            print(f"step {t:4d} loss {float(loss):.6f} norm {norm:.4f} lr {lr:.3e}", flush=True)
    return 0


def describe(path):
    config, tensors = read_checkpoint(path)
    print(" ".join(f"{k}={v}" for k, v in config.items()))
    for name in TENSORS:
        shape, values = tensors[name]
        print(f"{name:9s} {'x'.join(map(str, shape)):>16s} first {values[0]:+.6f}")
    print(f"parameters {sum(len(v) for _, v in tensors.values())}")
    return 0


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("describe")
    d.add_argument("checkpoint")
    o = sub.add_parser("order")
    for name in ("windows", "seed", "epoch"):
        o.add_argument(name, type=int)
    t = sub.add_parser("train")
    for name in ("checkpoint", "data"):
        t.add_argument(name)
    for name in ("batch", "seq", "steps"):
        t.add_argument(name, type=int)
    t.add_argument("record")
    t.add_argument("--lr", type=float, default=1e-3)
    t.add_argument("--warmup", type=int, default=0)
    t.add_argument("--lr-min-fraction", type=float, default=0.1)
    t.add_argument("--weight-decay", type=float, default=0.1)
    t.add_argument("--grad-clip", type=float, default=1.0)
    t.add_argument("--seed", type=int, default=1337)
    t.add_argument("--device", default="cuda")
    args = parser.parse_args(argv[1:])
    if args.command == "order":
        print(" ".join(map(str, shuffled_order(args.windows, args.seed, args.epoch))))
        return 0
    try:
        if args.command == "describe":
            return describe(args.checkpoint)
        args.data = [args.data]
        return train(args)
    except (FormatError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
