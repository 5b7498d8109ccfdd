#!/usr/bin/env python3
"""Writes the loss test fixtures in tests/fixtures/losses/ (read by tests/mcdl/test_*_loss.cpp).

PyTorch (1.13) computes SimGCD's losses as SimGCD's train.py does (docs/reference-facts.md §1.3,
re-typed from that description: DistillLoss, me-max, info_nce_logits + CrossEntropyLoss,
SupConLoss) and MCDL's divide-and-conquer losses as docs/method.md §4 states them, each on small
random inputs, with the gradient of every term with respect to its inputs. The files are
written with numpy + json + struct (no safetensors package), as tools/make_safetensors_fixtures.py does.

Run from anywhere: /usr/bin/python3 tools/make_loss_fixtures.py
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fixture_io import write_safetensors  # noqa: E402

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "losses")



def f32(t):
    return t.detach().numpy().astype("<f4")


# ---- SimGCD (train.py), float32 as in training ------------------------------------------------

def teacher_schedule(warmup, final, warmup_epochs, epochs):
    return np.concatenate((np.linspace(warmup, final, warmup_epochs), np.ones(epochs - warmup_epochs) * final))


def distill_loss(student_output, teacher_output, epoch, student_temp=0.1):
    temp = teacher_schedule(0.07, 0.04, 30, 200)[epoch]
    student_out = (student_output / student_temp).chunk(2)
    teacher_out = F.softmax(teacher_output / temp, dim=-1).detach().chunk(2)
    total, terms = 0, 0
    for iq, q in enumerate(teacher_out):
        for v in range(len(student_out)):
            if v == iq:
                continue
            total += torch.sum(-q * F.log_softmax(student_out[v], dim=-1), dim=-1).mean()
            terms += 1
    return total / terms


def me_max(student_out, student_temp=0.1):
    avg_probs = (student_out / student_temp).softmax(dim=1).mean(dim=0)
    return -torch.sum(torch.log(avg_probs ** (-avg_probs))) + math.log(float(len(avg_probs)))


def info_nce_logits(features, temperature=1.0):
    b = features.size(0) // 2
    labels = torch.cat([torch.arange(b) for _ in range(2)], dim=0)
    labels = (labels.unsqueeze(0) == labels.unsqueeze(1)).float()
    features = F.normalize(features, dim=1)
    similarity = features @ features.T
    mask = torch.eye(labels.shape[0], dtype=torch.bool)
    labels = labels[~mask].view(labels.shape[0], -1)
    similarity = similarity[~mask].view(similarity.shape[0], -1)
    positives = similarity[labels.bool()].view(labels.shape[0], -1)
    negatives = similarity[~labels.bool()].view(similarity.shape[0], -1)
    logits = torch.cat([positives, negatives], dim=1) / temperature
    return logits, torch.zeros(logits.shape[0], dtype=torch.long)


def supcon(features, labels, temperature=0.07, base_temperature=0.07, anchor_rows=None):
    """HobbitLong's SupConLoss, contrast_mode 'all', on features [n, V, D] with labels [n]; with
    anchor_rows, only those rows of the [V·n] contrast set anchor (MCDL's L_sup)."""
    n, views = features.shape[0], features.shape[1]
    contrast = torch.cat(torch.unbind(features, dim=1), dim=0)
    anchors = contrast if anchor_rows is None else contrast[anchor_rows]
    rows = torch.arange(views * n) if anchor_rows is None else torch.as_tensor(anchor_rows)
    logits = anchors @ contrast.T / temperature
    logits = logits - logits.max(dim=1, keepdim=True)[0].detach()
    all_labels = labels.repeat(views)
    mask = (all_labels[rows].unsqueeze(1) == all_labels.unsqueeze(0)).float()
    logits_mask = torch.ones_like(mask)
    logits_mask[torch.arange(len(rows)), rows] = 0
    mask = mask * logits_mask
    exp_logits = torch.exp(logits) * logits_mask
    log_prob = logits - torch.log(exp_logits.sum(1, keepdim=True))
    mean_log_prob_pos = (mask * log_prob).sum(1) / mask.sum(1)
    return (-(temperature / base_temperature) * mean_log_prob_pos).mean()


def simgcd_fixture(generator, epoch, memax_weight):
    b, k, d = 6, 5, 8
    logits = (torch.rand(2 * b, k, generator=generator) * 2 - 1).requires_grad_(True)  # cosine logits
    proj = torch.randn(2 * b, d, generator=generator).requires_grad_(True)
    labelled = torch.tensor([1, 0, 1, 1, 0, 1], dtype=torch.bool)
    labels = torch.tensor([2, 4, 2, 0, 1, 3])  # the unlabelled rows' labels must be ignored

    cls_logits = torch.cat([x[labelled] for x in (logits / 0.1).chunk(2)], dim=0)
    cls = F.cross_entropy(cls_logits, torch.cat([labels[labelled] for _ in range(2)], dim=0))
    cluster = distill_loss(logits, logits.detach(), epoch)
    memax = me_max(logits)
    nce_logits, nce_labels = info_nce_logits(proj)
    contrastive = F.cross_entropy(nce_logits, nce_labels)
    sup_proj = torch.cat([x[labelled].unsqueeze(1) for x in proj.chunk(2)], dim=1)
    sup_con = supcon(F.normalize(sup_proj, dim=-1), labels[labelled])
    w = 0.35
    total = (1 - w) * (cluster + memax_weight * memax) + w * cls + (1 - w) * contrastive + w * sup_con

    out = {"logits": f32(logits), "projections": f32(proj), "labels": labels.numpy().astype("<i8"),
           "labelled": labelled.numpy().astype("u1"), "epoch": np.array([epoch], dtype="<i8"),
           "memax_weight": np.array([memax_weight], dtype="<f8")}
    for name, term in [("total", total), ("cls", cls), ("cluster", cluster), ("memax", memax),
                       ("contrastive", contrastive), ("supcon", sup_con)]:
        grad_logits, grad_proj = torch.autograd.grad(term, [logits, proj], allow_unused=True, retain_graph=True)
        out[name] = f32(term).reshape(1)
        out[name + ".grad_logits"] = f32(grad_logits) if grad_logits is not None else np.zeros((2 * b, k), "<f4")
        out[name + ".grad_projections"] = f32(grad_proj) if grad_proj is not None else np.zeros((2 * b, d), "<f4")
    return out


# ---- MCDL's divide-and-conquer losses (docs/method.md §4) ----------------------------------------

def sharpen(p, temperature):
    q = p ** (1.0 / temperature)
    return q / q.sum(dim=1, keepdim=True)


def dcl_fixture(generator):
    out = {}
    b, k, d = 6, 5, 8

    # L_sup: union of labelled and high samples, anchors the high rows of both views, τ_s = 0.04.
    proj = torch.randn(2 * b, d, generator=generator).requires_grad_(True)
    labelled = torch.tensor([1, 0, 0, 1, 0, 0], dtype=torch.bool)
    high = torch.tensor([0, 1, 0, 0, 1, 1], dtype=torch.bool)
    labels = torch.tensor([1, 1, 3, 2, 2, 4])  # labelled: true labels; high: weak modes; else ignored
    union = labelled | high
    union_proj = torch.cat([x[union].unsqueeze(1) for x in proj.chunk(2)], dim=1)
    u = int(union.sum())
    high_in_union = high[union].nonzero().flatten().tolist()
    anchor_rows = high_in_union + [r + u for r in high_in_union]
    sup = supcon(F.normalize(union_proj, dim=-1), labels[union], 0.04, 0.04, anchor_rows)
    out.update({"sup.projections": f32(proj), "sup.labels": labels.numpy().astype("<i8"),
                "sup.labelled": labelled.numpy().astype("u1"), "sup.is_high": high.numpy().astype("u1"),
                "sup.loss": f32(sup).reshape(1), "sup.grad_projections": f32(torch.autograd.grad(sup, proj)[0])})

    # Sharpening.
    p = torch.softmax(torch.randn(4, k, generator=generator), dim=1)
    out.update({"sharpen.p": f32(p), "sharpen.out": f32(sharpen(p, 0.7))})

    # MixMatch targets: one-hot(mode_w) for H, sharpen((mean_w + mean_s)/2, 0.7) for M.
    n = 5
    mode_w = torch.tensor([3, 0, 1, 4, 2])
    is_high = torch.tensor([1, 0, 0, 1, 0], dtype=torch.bool)
    mean_w = torch.softmax(torch.randn(n, k, generator=generator), dim=1)
    mean_s = torch.softmax(torch.randn(n, k, generator=generator), dim=1)
    targets = torch.where(is_high.unsqueeze(1), F.one_hot(mode_w, k).float(), sharpen((mean_w + mean_s) / 2, 0.7))
    out.update({"targets.mode_w": mode_w.numpy().astype("<i8"), "targets.is_high": is_high.numpy().astype("u1"),
                "targets.mean_w": f32(mean_w), "targets.mean_s": f32(mean_s), "targets.out": f32(targets)})

    # Mixing with a fixed permutation and δ' (images [n, 2, 3] and the targets above).
    permutation = torch.tensor([2, 0, 4, 1, 3])
    delta = 0.8125
    images = torch.randn(n, 2, 3, generator=generator)
    out.update({"mix.permutation": permutation.numpy().astype("<i8"), "mix.delta": np.array([delta], "<f8"),
                "mix.images": f32(images), "mix.images_out": f32(delta * images + (1 - delta) * images[permutation]),
                "mix.targets_out": f32(delta * targets + (1 - delta) * targets[permutation])})

    # L_semi on the mixed targets: CE over H, squared L2 (summed over classes) over M.
    mixed_targets = delta * targets + (1 - delta) * targets[permutation]
    mixed_logits = (torch.rand(n, k, generator=generator) * 2 - 1).requires_grad_(True)
    probs = torch.softmax(mixed_logits / 0.1, dim=1)
    semi_h = torch.sum(-mixed_targets[is_high] * torch.log_softmax(mixed_logits[is_high] / 0.1, dim=1), dim=1).mean()
    semi_m = ((mixed_targets[~is_high] - probs[~is_high]) ** 2).sum(dim=1).mean()
    semi = semi_h + semi_m
    out.update({"semi.logits": f32(mixed_logits), "semi.targets": f32(mixed_targets),
                "semi.loss": f32(semi).reshape(1),
                "semi.grad_logits": f32(torch.autograd.grad(semi, mixed_logits)[0])})

    # L_self: sharpened detached weak prediction against the strong view's softmax(l/0.1).
    weak = torch.softmax(torch.randn(b, k, generator=generator), dim=1)
    strong_logits = (torch.rand(b, k, generator=generator) * 2 - 1).requires_grad_(True)
    q = sharpen(weak, 0.7)
    self_loss = torch.sum(-q * torch.log_softmax(strong_logits / 0.1, dim=1), dim=1).mean()
    out.update({"self.weak": f32(weak), "self.strong_logits": f32(strong_logits),
                "self.loss": f32(self_loss).reshape(1),
                "self.grad_strong_logits": f32(torch.autograd.grad(self_loss, strong_logits)[0])})
    return out


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    generator = torch.Generator().manual_seed(20240601)
    write_safetensors(os.path.join(OUT_DIR, "simgcd_epoch3.safetensors"), simgcd_fixture(generator, 3, 2.0))
    write_safetensors(os.path.join(OUT_DIR, "simgcd_epoch40.safetensors"), simgcd_fixture(generator, 40, 1.0))
    write_safetensors(os.path.join(OUT_DIR, "teacher_schedule.safetensors"),
                      {"temperatures": teacher_schedule(0.07, 0.04, 30, 200).astype("<f8")})
    write_safetensors(os.path.join(OUT_DIR, "dcl.safetensors"), dcl_fixture(generator))


if __name__ == "__main__":
    main()
