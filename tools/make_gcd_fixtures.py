#!/usr/bin/env python3
"""Writes tests/fixtures/gcd/head_loss.safetensors (read by tests/mcdl/test_gcd_baseline.cpp).

PyTorch runs GCD's projection head and contrastive loss as sgvaze/generalized-category-discovery
does (docs/reference-facts.md §3.1; re-typed from that description and the code it names:
vits.DINOHead(in_dim, out_dim, nlayers=3) with norm_last_layer=True, contrastive_training.py's
info_nce_logits + CrossEntropyLoss and SupConLoss()), at small widths (in 12, hidden 16,
bottleneck 8, out 24) on B = 6 samples (12 rows), in float64: the head's output, the loss terms,
and the gradient of the total loss with respect to the input features and every trained head
parameter.

Run from anywhere: /usr/bin/python3 tools/make_gcd_fixtures.py
"""
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fixture_io import write_safetensors  # noqa: E402

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "gcd")



class DINOHead(nn.Module):
    """GCD's vits.DINOHead (DINO's), use_bn=False, norm_last_layer=True."""

    def __init__(self, in_dim, out_dim, nlayers=3, hidden_dim=2048, bottleneck_dim=256):
        super().__init__()
        layers = [nn.Linear(in_dim, hidden_dim), nn.GELU()]
        for _ in range(nlayers - 2):
            layers += [nn.Linear(hidden_dim, hidden_dim), nn.GELU()]
        layers.append(nn.Linear(hidden_dim, bottleneck_dim))
        self.mlp = nn.Sequential(*layers)
        self.apply(self._init_weights)
        self.last_layer = nn.utils.weight_norm(nn.Linear(bottleneck_dim, out_dim, bias=False))
        self.last_layer.weight_g.data.fill_(1)
        self.last_layer.weight_g.requires_grad = False

    def _init_weights(self, m):
        if isinstance(m, nn.Linear):
            nn.init.trunc_normal_(m.weight, std=.02)
            if m.bias is not None:
                nn.init.constant_(m.bias, 0)

    def forward(self, x):
        x = self.mlp(x)
        x = F.normalize(x, dim=-1, p=2)
        return self.last_layer(x)


def info_nce_logits(features, temperature=1.0, n_views=2):
    b_ = int(0.5 * features.size(0))
    labels = torch.cat([torch.arange(b_) for _ in range(n_views)], dim=0)
    labels = (labels.unsqueeze(0) == labels.unsqueeze(1)).float()
    features = F.normalize(features, dim=1)
    similarity_matrix = torch.matmul(features, features.T)
    mask = torch.eye(labels.shape[0], dtype=torch.bool)
    labels = labels[~mask].view(labels.shape[0], -1)
    similarity_matrix = similarity_matrix[~mask].view(similarity_matrix.shape[0], -1)
    positives = similarity_matrix[labels.bool()].view(labels.shape[0], -1)
    negatives = similarity_matrix[~labels.bool()].view(similarity_matrix.shape[0], -1)
    logits = torch.cat([positives, negatives], dim=1) / temperature
    return logits, torch.zeros(logits.shape[0], dtype=torch.long)


def supcon_loss(features, labels, temperature=0.07, base_temperature=0.07):
    """HobbitLong's SupConLoss, contrast_mode='all'; features [bsz, n_views, D]."""
    batch_size = features.shape[0]
    labels = labels.contiguous().view(-1, 1)
    mask = torch.eq(labels, labels.T).to(features.dtype)
    contrast_count = features.shape[1]
    contrast_feature = torch.cat(torch.unbind(features, dim=1), dim=0)
    anchor_dot_contrast = torch.matmul(contrast_feature, contrast_feature.T) / temperature
    logits_max, _ = torch.max(anchor_dot_contrast, dim=1, keepdim=True)
    logits = anchor_dot_contrast - logits_max.detach()
    mask = mask.repeat(contrast_count, contrast_count)
    logits_mask = torch.scatter(torch.ones_like(mask), 1, torch.arange(batch_size * contrast_count).view(-1, 1), 0)
    mask = mask * logits_mask
    exp_logits = torch.exp(logits) * logits_mask
    log_prob = logits - torch.log(exp_logits.sum(1, keepdim=True))
    mean_log_prob_pos = (mask * log_prob).sum(1) / mask.sum(1)
    loss = -(temperature / base_temperature) * mean_log_prob_pos
    return loss.view(contrast_count, batch_size).mean()


def main():
    torch.manual_seed(0)
    torch.set_default_dtype(torch.float64)
    in_dim, hidden, bottleneck, out_dim, b = 12, 16, 8, 24, 6
    head = DINOHead(in_dim, out_dim, hidden_dim=hidden, bottleneck_dim=bottleneck)
    # Wider weights than the 0.02 init, so that the bottleneck is far from zero and every
    # parameter's gradient is well above float noise.
    with torch.no_grad():
        for i in (0, 2, 4):
            head.mlp[i].weight.normal_(0.0, 0.4)
            head.mlp[i].bias.uniform_(-0.2, 0.2)
    features = torch.randn(2 * b, in_dim, requires_grad=True)
    labels = torch.tensor([0, 2, 1, 0, 1, 2], dtype=torch.int64)
    mask_lab = torch.tensor([1, 0, 1, 1, 0, 1], dtype=torch.bool)

    # contrastive_training.py::train, sup_con_weight 0.35, temperature 1.0.
    out = head(features)
    z = F.normalize(out, dim=-1)
    logits, targets = info_nce_logits(z, temperature=1.0)
    contrastive = nn.CrossEntropyLoss()(logits, targets)
    f1, f2 = [f[mask_lab] for f in z.chunk(2)]
    supcon = supcon_loss(torch.cat([f1.unsqueeze(1), f2.unsqueeze(1)], dim=1), labels[mask_lab])
    total = 0.65 * contrastive + 0.35 * supcon
    total.backward()

    tensors = {"features": features.detach().numpy(), "labels": labels.numpy(),
               "labelled": mask_lab.numpy().astype("u1"), "output": out.detach().numpy(),
               "contrastive": np.array([contrastive.item()]), "supcon": np.array([supcon.item()]),
               "total": np.array([total.item()]), "grad.features": features.grad.numpy()}
    for name, p in head.state_dict().items():
        tensors["head." + name] = p.numpy()
    for name, p in head.named_parameters():
        if p.requires_grad:
            tensors["grad.head." + name] = p.grad.numpy()
    os.makedirs(OUT_DIR, exist_ok=True)
    write_safetensors(os.path.join(OUT_DIR, "head_loss.safetensors"), tensors)


if __name__ == "__main__":
    main()
