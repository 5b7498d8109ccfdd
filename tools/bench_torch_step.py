#!/usr/bin/env python3
"""Training-step throughput of the engine (build/bench_step) against PyTorch in the same run, on
the same device: DINO ViT-B/16 (or DINOv2 ViT-B/14, --model) with SimGCD's head, blocks 0-10 frozen, SGD; the
workloads of
tools/bench_step.cpp (forward, simgcd, mcdl), compute only (the views are made once on the
device). PyTorch runs DINO's model as SimGCD does (the last block on every token), with
F.scaled_dot_product_attention where it exists (2.0+), in fp32, TF32 and bf16 autocast, eagerly and, for the
precisions --compile names (default bf16), compiled by torch.compile (the model, so its forwards and their backward;
compile time is left out by the warm-up). Prints one table of images per second and the engine's ratio to PyTorch
(eager, and compiled) in each precision (above 1: the engine is faster).

A benchmark aid, never a dependency: without PyTorch it prints the engine's numbers alone.

  python3 tools/bench_torch_step.py --device cuda --batch 128 --engine build/bench_step
  python3 tools/bench_torch_step.py --device cpu --batch 16 --precisions fp32 --workloads forward,simgcd,mcdl
  python3 tools/bench_torch_step.py --device cuda --model vit_base_patch14_dinov2_reg4 --precisions bf16

DINOv2 as its reference model runs it: patch 14, LayerScale on both branches, the position embedding
stored for 518 px (37 x 37) and resized bicubically to the input's grid on every forward, and with _reg4
four register tokens after CLS.
"""
import argparse
import math
import os
import subprocess
import sys
import time

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    torch = None

DIM, DEPTH, HEADS, MLP, IMG = 768, 12, 12, 3072, 224
# name: (patch, register tokens, LayerScale, position-embedding grid as stored)
MODELS = {"vit_base_patch16": (16, 0, False, 14), "vit_base_patch14_dinov2": (14, 0, True, 37),
          "vit_base_patch14_dinov2_reg4": (14, 4, True, 37)}


if torch is not None:

    def attention(q, k, v):
        """PyTorch's fused attention where it has one (2.0+), else DINO's softmax(q·kᵀ·scale)·v."""
        if hasattr(F, "scaled_dot_product_attention"):
            return F.scaled_dot_product_attention(q, k, v)
        return torch.softmax(q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5, -1) @ v

    class Block(nn.Module):
        def __init__(self, layer_scale):
            super().__init__()
            self.norm1, self.norm2 = nn.LayerNorm(DIM, eps=1e-6), nn.LayerNorm(DIM, eps=1e-6)
            self.qkv, self.proj = nn.Linear(DIM, 3 * DIM), nn.Linear(DIM, DIM)
            self.fc1, self.fc2 = nn.Linear(DIM, MLP), nn.Linear(MLP, DIM)
            # DINOv2's LayerScale: a learned gain on each branch (1e-5 at its initialisation).
            self.ls1 = nn.Parameter(torch.full((DIM,), 1e-5)) if layer_scale else None
            self.ls2 = nn.Parameter(torch.full((DIM,), 1e-5)) if layer_scale else None

        def forward(self, x):
            b, n, c = x.shape
            q, k, v = self.qkv(self.norm1(x)).reshape(b, n, 3, HEADS, c // HEADS).permute(2, 0, 3, 1, 4)
            branch = self.proj(attention(q, k, v).transpose(1, 2).reshape(b, n, c))
            x = x + (branch if self.ls1 is None else self.ls1 * branch)
            branch = self.fc2(F.gelu(self.fc1(self.norm2(x))))
            return x + (branch if self.ls2 is None else self.ls2 * branch)

    class SimGCDModel(nn.Module):
        """DINO's ViT-B/16 or DINOv2's ViT-B/14, and SimGCD's DINOHead (3-layer MLP, weight-normed last
        layer)."""

        def __init__(self, classes, model="vit_base_patch16"):
            super().__init__()
            patch, registers, layer_scale, self.pos_grid = MODELS[model]
            self.grid = IMG // patch
            self.patch = nn.Conv2d(3, DIM, patch, patch)
            self.cls = nn.Parameter(torch.randn(1, 1, DIM) * 0.02)
            self.registers = nn.Parameter(torch.randn(1, registers, DIM) * 0.02) if registers else None
            self.pos = nn.Parameter(torch.randn(1, self.pos_grid ** 2 + 1, DIM) * 0.02)
            self.blocks = nn.ModuleList(Block(layer_scale) for _ in range(DEPTH))
            self.norm = nn.LayerNorm(DIM, eps=1e-6)
            self.mlp = nn.Sequential(nn.Linear(DIM, 2048), nn.GELU(), nn.Linear(2048, 2048), nn.GELU(),
                                     nn.Linear(2048, 256))
            self.last = nn.utils.parametrizations.weight_norm(nn.Linear(256, classes, bias=False)) \
                if hasattr(nn.utils, "parametrizations") and hasattr(nn.utils.parametrizations, "weight_norm") \
                else nn.utils.weight_norm(nn.Linear(256, classes, bias=False))

        def position_embedding(self):
            if self.pos_grid == self.grid:
                return self.pos
            # DINOv2's interpolate_pos_encoding, every forward: the stored grid resized bicubically.
            patches = self.pos[:, 1:].reshape(1, self.pos_grid, self.pos_grid, DIM).permute(0, 3, 1, 2)
            patches = F.interpolate(patches, size=(self.grid, self.grid), mode="bicubic", antialias=False)
            return torch.cat([self.pos[:, :1], patches.permute(0, 2, 3, 1).reshape(1, -1, DIM)], 1)

        def backbone(self, images):
            x = self.patch(images).flatten(2).transpose(1, 2)
            x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1) + self.position_embedding()
            if self.registers is not None:
                x = torch.cat([x[:, :1], self.registers.expand(x.shape[0], -1, -1), x[:, 1:]], 1)
            for block in self.blocks:
                x = block(x)
            return self.norm(x)[:, 0]

        def forward(self, images):
            projection = self.mlp(self.backbone(images))
            return projection, self.last(F.normalize(projection, dim=-1))

        def freeze_as_simgcd(self):
            for name, p in self.named_parameters():
                p.requires_grad = name.startswith(("blocks.11.", "norm.", "mlp.")) or name.endswith(("weight_v",
                                                                                                  "original1"))


def supcon(features, labels, temperature=0.07):
    f = F.normalize(features, dim=-1)
    logits = f @ f.T / temperature
    eye = torch.eye(len(f), device=f.device, dtype=torch.bool)
    logits = logits.masked_fill(eye, -1e9)
    positive = (labels[:, None] == labels[None, :]) & ~eye
    log_prob = logits - torch.logsumexp(logits, 1, keepdim=True)
    return -((log_prob * positive).sum(1) / positive.sum(1).clamp(min=1)).mean()


def simgcd_loss(projection, logits, labels, labelled):
    """SimGCD's train(): cls + cluster (distillation, me-max) + InfoNCE + SupCon."""
    b = len(labels)
    student = logits / 0.1
    teacher = F.softmax(logits.detach() / 0.04, -1).chunk(2)
    cls = F.cross_entropy(torch.cat([c[labelled] for c in student.chunk(2)]), labels[labelled].repeat(2))
    log_student = F.log_softmax(student, -1).chunk(2)
    cluster = -0.5 * ((teacher[0] * log_student[1]).sum(-1).mean() + (teacher[1] * log_student[0]).sum(-1).mean())
    probs = F.softmax(student, -1).mean(0)
    cluster = cluster - 2.0 * (math.log(logits.shape[1]) + (probs * torch.log(probs)).sum())
    f = F.normalize(projection, dim=-1)
    sim = (f @ f.T).masked_fill(torch.eye(2 * b, device=f.device, dtype=torch.bool), -1e9)
    positives = torch.cat([torch.arange(b, 2 * b), torch.arange(b)]).to(f.device)
    contrastive = F.cross_entropy(sim, positives)
    sup = supcon(torch.cat([c[labelled] for c in projection.chunk(2)]), labels[labelled].repeat(2))
    return 0.65 * cluster + 0.35 * cls + 0.65 * contrastive + 0.35 * sup


class Banks:
    """MCDL's two memory banks: a ring of mu probability vectors per unlabelled sample."""

    def __init__(self, n, classes, mu, device):
        self.probs = torch.zeros(2, n, mu, classes, device=device)
        self.count = torch.zeros(n, dtype=torch.long, device=device)
        self.mu = mu

    def update(self, slots, weak, strong):
        position = self.count[slots] % self.mu
        # fp32 banks, as the engine's: CPU autocast (unlike CUDA's) leaves softmax in bf16.
        self.probs[0, slots, position] = weak.float()
        self.probs[1, slots, position] = strong.float()
        self.count[slots] += 1

    def buckets(self, slots):
        predictions = self.probs[:, slots].argmax(-1)
        mode = predictions.mode(-1).values
        unanimous = (predictions == mode[..., None]).all(-1)
        agree = (mode[0] == mode[1]) & (self.count[slots] >= self.mu)
        return agree & unanimous.all(0), agree & ~unanimous.all(0), mode[0]


def mcdl_terms(model, weak_logits, projection, weak1, strong, labels, labelled, slots, banks):
    b = len(labels)
    unlabelled = ~labelled
    with torch.no_grad():
        w = weak_logits.detach()
        weak_p = ((F.softmax(w[:b] / 0.1, -1) + F.softmax(w[b:] / 0.1, -1)) / 2)[unlabelled]
    strong_logits = model(strong)[1]
    banks.update(slots, weak_p, F.softmax(strong_logits.detach()[unlabelled] / 0.1, -1))
    high, medium, mode = banks.buckets(slots)
    sup_labels = labels.clone()
    rows = unlabelled.nonzero().squeeze(1)
    sup_labels[rows[high]] = mode[high]
    anchors = labelled.clone()
    anchors[rows[high]] = True
    sup = supcon(torch.cat([c[anchors] for c in projection.chunk(2)]), sup_labels[anchors].repeat(2))
    x = rows[high | medium]
    semi = torch.zeros((), device=weak1.device)
    if len(x) > 0:
        with torch.no_grad():
            targets = F.one_hot(mode[high | medium], weak_logits.shape[1]).float()
        lam = float(torch.distributions.Beta(0.75, 0.75).sample())
        lam = max(lam, 1 - lam)
        perm = torch.randperm(len(x), device=x.device)
        images = weak1[x]
        mixed = lam * images + (1 - lam) * images[perm]
        mixed_targets = lam * targets + (1 - lam) * targets[perm]
        semi = -(mixed_targets * F.log_softmax(model(mixed)[1] / 0.1, -1)).sum(-1).mean()
    self_term = -(weak_p * F.log_softmax(strong_logits[unlabelled] / 0.1, -1)).sum(-1).mean()
    return sup + 0.35 * (semi + self_term)


def torch_times(args, precision, workloads, compiled=False):
    device = torch.device(args.device)
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    torch.backends.cudnn.allow_tf32 = precision == "tf32"
    torch.manual_seed(0)
    classes, b = 200, args.batch
    model = SimGCDModel(classes, args.model).to(device)
    model.freeze_as_simgcd()
    optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1, momentum=0.9,
                                weight_decay=5e-5)
    weak1, weak2, strong = (torch.rand(b, 3, IMG, IMG, device=device) * 4 - 2 for _ in range(3))
    both = torch.cat([weak1, weak2])
    labelled = torch.arange(b, device=device) < b // 2
    labels = torch.where(labelled, torch.arange(b, device=device) % (classes // 2), torch.full_like(labelled, -1,
                                                                                                    dtype=torch.long))
    slots = torch.arange(b - b // 2, device=device)
    banks = Banks(b, classes, 4, device)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=precision == "bf16")
    # torch.compile wraps the model (parameters shared, so the optimizer above still holds them).
    run_model = torch.compile(model) if compiled else model
    run_backbone = torch.compile(model.backbone) if compiled else model.backbone

    def forward():
        with torch.no_grad(), autocast:
            run_backbone(weak1)

    def step(mcdl):
        with autocast:
            projection, logits = run_model(both)
            loss = simgcd_loss(projection.float(), logits.float(), labels, labelled)
            if mcdl:
                loss = loss + mcdl_terms(run_model, logits.float(), projection.float(), weak1, strong, labels,
                                         labelled, slots, banks)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    work = {"forward": forward, "simgcd": lambda: step(False), "mcdl": lambda: step(True)}
    results = {}
    for name in workloads:
        # MCDL's mixed batch changes size from step to step: compiled, it needs more steps to settle.
        for _ in range(max(args.warmup, (8 if compiled else 4) if name == "mcdl" else 0)):
            work[name]()
        times = []
        for _ in range(args.iterations):
            if device.type == "cuda":
                torch.cuda.synchronize()
            start = time.perf_counter()
            work[name]()
            if device.type == "cuda":
                torch.cuda.synchronize()
            times.append(time.perf_counter() - start)
        results[name] = b / sorted(times)[len(times) // 2]
    return results


def engine_times(args, precision, workloads):
    command = [args.engine, "--device", args.device, "--model", args.model, "--precision", precision, "--batch",
               str(args.batch), "--iterations", str(args.iterations), "--warmup", str(args.warmup), "--workloads",
               ",".join(workloads)]
    environment = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    try:
        run = subprocess.run(command, capture_output=True, text=True, env=environment)
    except OSError as error:
        print(f"engine: {error}", file=sys.stderr)
        return {}
    if run.returncode != 0:
        print(f"engine ({precision}): {run.stderr.strip()}", file=sys.stderr)
        return {}
    results = {}
    for line in run.stdout.splitlines():
        name, _, _, images_per_second = line.split("\t")
        results[name] = float(images_per_second)
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--model", default="vit_base_patch16", choices=sorted(MODELS))
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--precisions", default="fp32,tf32,bf16")
    parser.add_argument("--workloads", default="forward,simgcd,mcdl")
    parser.add_argument("--engine", default="build/bench_step")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="CPU threads of both sides")
    parser.add_argument("--compile", default="bf16", help="precisions also timed under torch.compile ('none': no column)")
    args = parser.parse_args()
    if torch is not None:
        torch.set_num_threads(args.threads)
    workloads = args.workloads.split(",")
    have_torch = torch is not None and (args.device == "cpu" or torch.cuda.is_available())
    if have_torch:
        where = torch.cuda.get_device_name() if args.device == "cuda" else f"CPU, {torch.get_num_threads()} threads"
        print(f"PyTorch {torch.__version__} on {where}; {args.model}, batch {args.batch}, median of "
              f"{args.iterations} steps")
    compile_precisions = set(args.compile.split(",")) if have_torch and hasattr(torch, "compile") else set()
    print(f"{'workload':<10} {'precision':<9} {'engine img/s':>13} {'PyTorch img/s':>14} {'ratio':>6} "
          f"{'compiled img/s':>15} {'ratio':>6}")

    def cell(value, width):
        return f"{value:{width}.1f}" if value else f"{'-':>{width}}"

    def ratio(e, t):
        return f"{e / t:6.2f}" if e and t else "     -"

    for precision in args.precisions.split(","):
        engine = engine_times(args, precision, workloads)
        reference = torch_times(args, precision, workloads) if have_torch else {}
        compiled = torch_times(args, precision, workloads, compiled=True) if precision in compile_precisions else {}
        for name in workloads:
            e, t, c = engine.get(name), reference.get(name), compiled.get(name)
            print(f"{name:<10} {precision:<9} {cell(e, 13)} {cell(t, 14)} {ratio(e, t)} {cell(c, 15)} {ratio(e, c)}",
                  flush=True)


if __name__ == "__main__":
    main()
