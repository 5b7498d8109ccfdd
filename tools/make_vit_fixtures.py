#!/usr/bin/python3
"""Writes the PyTorch parity fixtures of the ViT layers and the SimGCD head (tests/fixtures/vit/).

Run by hand with Debian's python3-torch (1.13): /usr/bin/python3 tools/make_vit_fixtures.py
`make test` only reads the files it writes.

The model classes below follow facebookresearch/dino vision_transformer.py (PatchEmbed conv,
cls token, pos embed with interpolate_pos_encoding, pre-norm Blocks with a fused qkv, final
norm, forward = CLS token) and SimGCD's DINOHead, with a small configuration: 32x32 images,
patch 8, width 48, depth 2, 3 heads, 3 channels; head hidden 64, bottleneck 32, 10 classes.

Files (safetensors, written by hand below: 8-byte LE header length, JSON header, data):
  weights.safetensors    every parameter (DINO / SimGCD state-dict names, head under "head."),
                         f32; metadata "config" = the engine's model-config JSON
  reference.safetensors  f32 inputs and f64 expected values, computed by the same model in
                         float64 from the f32 weights:
    images_32 [2,3,32,32], images_40 [2,3,40,40], targets [2] (i64)
    features_32 [2,48]     CLS feature at the native size
    projection [2,32], logits [2,10]   head outputs on features_32
    pos_embed_40 [1,26,48] the interpolated position embedding for 40x40 inputs
    features_40 [2,48]     CLS feature at 40x40 (pos-embed interpolation)
    loss []                mean(projection^2) + cross_entropy(logits / 0.1, targets), with
                           grad_from_block = 1 (block 1 and the head train, weight_g frozen)
    grad.<name>            d loss / d parameter for every trainable parameter
"""
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fixture_io import write_safetensors  # noqa: E402

IMG, PATCH, CHANS, DIM, DEPTH, HEADS = 32, 8, 3, 48, 2, 3
HEAD_HIDDEN, HEAD_BOTTLENECK, CLASSES = 64, 32, 10
GRAD_FROM_BLOCK = 1
EPS = 1e-6


# ---- DINO's ViT (vision_transformer.py, drop rates 0) ----------------------------------------
class PatchEmbed(nn.Module):
    def __init__(self, img_size, patch_size, in_chans, embed_dim):
        super().__init__()
        self.num_patches = (img_size // patch_size) * (img_size // patch_size)
        self.patch_size = patch_size
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)


class Attention(nn.Module):
    def __init__(self, dim, num_heads, qkv_bias):
        super().__init__()
        self.num_heads = num_heads
        self.scale = (dim // num_heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (q @ k.transpose(-2, -1)) * self.scale
        attn = attn.softmax(dim=-1)
        x = (attn @ v).transpose(1, 2).reshape(B, N, C)
        return self.proj(x)


class Mlp(nn.Module):
    def __init__(self, in_features, hidden_features):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden_features, in_features)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class Block(nn.Module):
    def __init__(self, dim, num_heads, mlp_ratio, qkv_bias):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=EPS)
        self.attn = Attention(dim, num_heads, qkv_bias)
        self.norm2 = nn.LayerNorm(dim, eps=EPS)
        self.mlp = Mlp(dim, int(dim * mlp_ratio))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class VisionTransformer(nn.Module):
    def __init__(self, img_size, patch_size, in_chans, embed_dim, depth, num_heads, mlp_ratio=4.0, qkv_bias=True):
        super().__init__()
        self.patch_embed = PatchEmbed(img_size, patch_size, in_chans, embed_dim)
        num_patches = self.patch_embed.num_patches
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, num_patches + 1, embed_dim))
        self.blocks = nn.ModuleList([Block(embed_dim, num_heads, mlp_ratio, qkv_bias) for _ in range(depth)])
        self.norm = nn.LayerNorm(embed_dim, eps=EPS)

    def interpolate_pos_encoding(self, x, w, h):
        npatch = x.shape[1] - 1
        N = self.pos_embed.shape[1] - 1
        if npatch == N and w == h:
            return self.pos_embed
        class_pos_embed = self.pos_embed[:, 0]
        patch_pos_embed = self.pos_embed[:, 1:]
        dim = x.shape[-1]
        w0 = w // self.patch_embed.patch_size
        h0 = h // self.patch_embed.patch_size
        w0, h0 = w0 + 0.1, h0 + 0.1
        patch_pos_embed = nn.functional.interpolate(
            patch_pos_embed.reshape(1, int(math.sqrt(N)), int(math.sqrt(N)), dim).permute(0, 3, 1, 2),
            scale_factor=(w0 / math.sqrt(N), h0 / math.sqrt(N)),
            mode='bicubic',
        )
        assert int(w0) == patch_pos_embed.shape[-2] and int(h0) == patch_pos_embed.shape[-1]
        patch_pos_embed = patch_pos_embed.permute(0, 2, 3, 1).view(1, -1, dim)
        return torch.cat((class_pos_embed.unsqueeze(0), patch_pos_embed), dim=1)

    def prepare_tokens(self, x):
        B, nc, w, h = x.shape
        x = self.patch_embed(x)
        cls_tokens = self.cls_token.expand(B, -1, -1)
        x = torch.cat((cls_tokens, x), dim=1)
        return x + self.interpolate_pos_encoding(x, w, h)

    def forward(self, x):
        x = self.prepare_tokens(x)
        for blk in self.blocks:
            x = blk(x)
        x = self.norm(x)
        return x[:, 0]


# ---- SimGCD's DINOHead (nlayers = 3, norm_last_layer = True) ----------------------------------
class DINOHead(nn.Module):
    def __init__(self, in_dim, out_dim, hidden_dim, bottleneck_dim):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(in_dim, hidden_dim), nn.GELU(), nn.Linear(hidden_dim, hidden_dim), nn.GELU(),
                                 nn.Linear(hidden_dim, bottleneck_dim))
        self.last_layer = nn.utils.weight_norm(nn.Linear(in_dim, out_dim, bias=False))
        self.last_layer.weight_g.data.fill_(1)
        self.last_layer.weight_g.requires_grad = False

    def forward(self, x):
        x_proj = self.mlp(x)
        x = F.normalize(x, dim=-1, p=2)
        return x_proj, self.last_layer(x)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = VisionTransformer(IMG, PATCH, CHANS, DIM, DEPTH, HEADS)
        self.head = DINOHead(DIM, CLASSES, HEAD_HIDDEN, HEAD_BOTTLENECK)

    def named_state(self):
        """(engine name, parameter): the backbone unprefixed, the head under "head."."""
        out = [(n, p) for n, p in self.backbone.named_parameters()]
        out += [("head." + n, p) for n, p in self.head.named_parameters()]
        return out


def randomize(model, gen):
    """Random weights far from DINO's init (which makes attention nearly uniform), so every
    part of the computation matters: sharp attention, LayerNorm scales and biases != 1 / 0."""
    with torch.no_grad():
        for name, p in model.named_state():
            if name.endswith("weight_g"):
                continue  # fixed to 1, as SimGCD
            if p.dim() == 1 and ("norm" in name) and name.endswith("weight"):
                p.copy_(1 + 0.2 * torch.randn(p.shape, generator=gen))
            elif p.dim() == 1:
                p.copy_(0.2 * torch.randn(p.shape, generator=gen))
            elif name in ("cls_token", "pos_embed"):
                p.copy_(0.5 * torch.randn(p.shape, generator=gen))
            else:
                fan_in = p[0].numel()
                p.copy_(1.5 / math.sqrt(fan_in) * torch.randn(p.shape, generator=gen))


def set_trainable(model):
    """SimGCD: block >= GRAD_FROM_BLOCK trains; the head trains except weight_g."""
    for name, p in model.backbone.named_parameters():
        p.requires_grad = 'block' in name and int(name.split('.')[1]) >= GRAD_FROM_BLOCK
    for name, p in model.head.named_parameters():
        p.requires_grad = not name.endswith("weight_g")


def config_json():
    return json.dumps({
        "architecture": "dino_vit",
        "backbone": {"img_size": IMG, "patch_size": PATCH, "in_chans": CHANS, "embed_dim": DIM, "depth": DEPTH,
                     "num_heads": HEADS, "mlp_ratio": 4.0, "qkv_bias": True, "norm_eps": EPS},
        "head": {"hidden_dim": HEAD_HIDDEN, "bottleneck_dim": HEAD_BOTTLENECK, "num_classes": CLASSES},
    })


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures",
                                                                   "vit")
    os.makedirs(out_dir, exist_ok=True)
    gen = torch.Generator().manual_seed(20240607)
    model = Model()
    randomize(model, gen)
    weights = {n: p.detach().float().numpy().copy() for n, p in model.named_state()}

    images_32 = torch.randn(2, CHANS, 32, 32, generator=gen)
    images_40 = torch.randn(2, CHANS, 40, 40, generator=gen)
    targets = torch.tensor([3, 7], dtype=torch.int64)

    # The reference values: the same model and inputs in float64.
    model = model.double()
    set_trainable(model)
    ref = {"images_32": images_32.numpy(), "images_40": images_40.numpy(), "targets": targets.numpy()}
    x32, x40 = images_32.double(), images_40.double()
    with torch.no_grad():
        ref["features_40"] = model.backbone(x40).numpy()
        tokens_40 = model.backbone.patch_embed(x40)
        tokens_40 = torch.cat((model.backbone.cls_token.expand(2, -1, -1), tokens_40), dim=1)
        ref["pos_embed_40"] = model.backbone.interpolate_pos_encoding(tokens_40, 40, 40).numpy()
    features = model.backbone(x32)
    projection, logits = model.head(features)
    loss = (projection ** 2).mean() + F.cross_entropy(logits / 0.1, targets)
    loss.backward()
    ref["features_32"] = features.detach().numpy()
    ref["projection"] = projection.detach().numpy()
    ref["logits"] = logits.detach().numpy()
    ref["loss"] = np.array(loss.item(), dtype=np.float64)
    for name, p in model.named_state():
        if p.requires_grad:
            ref["grad." + name] = p.grad.numpy()
        else:
            assert p.grad is None, name

    write_safetensors(os.path.join(out_dir, "weights.safetensors"), weights, {"config": config_json()})
    write_safetensors(os.path.join(out_dir, "reference.safetensors"), ref)
    total = sum(os.path.getsize(os.path.join(out_dir, f)) for f in os.listdir(out_dir))
    print(f"wrote {out_dir}: {len(weights)} weights, {len(ref)} reference tensors, {total} bytes")


if __name__ == "__main__":
    main()
