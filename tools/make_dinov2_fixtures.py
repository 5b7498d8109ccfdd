#!/usr/bin/python3
"""Writes the PyTorch parity fixtures of the DINOv2 backbones (tests/fixtures/dinov2/).

Run by hand with Debian's python3-torch (1.13) and, for the photos, python3-skimage:
    /usr/bin/python3 tools/make_dinov2_fixtures.py
`make test` only reads the files it writes.

The reference model below is DINOv2's DinoVisionTransformer (facebookresearch/dinov2,
dinov2/models/vision_transformer.py, as its hub backbones build it: MLP blocks with GELU,
LayerScale, qkv bias, LayerNorm eps 1e-6, interpolate_offset 0.1, no antialiasing) written
again in a few lines, at a small configuration: patch 7, width 24, depth 2, 3 heads, MLP
ratio 2, 3 channels, the position embedding learned at 35 px (a 5x5 grid, DINOv2: 518 px and
37x37), so that every input size below interpolates it: 28 px (4x4, a downsampling as
224 -> 16x16 is) and 42 px (6x6).

Files:
  dinov2.pth, dinov2_reg4.pth         torch.save(state_dict()) with the official names
                                       (mask_token included), without / with 4 registers
  dinov2_hf.safetensors,              the same weights under Hugging Face's Dinov2Model names
  dinov2_reg4_hf.safetensors           (separate query / key / value, layer_scale*.lambda1)
  reference.safetensors               f32 inputs and f64 expected values (the model in float64
                                       from the f32 weights):
    images_28 [2,3,28,28], images_42 [2,3,42,42]   photos (or noise, see `photos`)
    features_28, features_42 [2,24]                CLS features without registers
    features_reg4_28, features_reg4_42 [2,24]      CLS features with registers
    pos_table [1,1370,4]                            a random 37x37 (+ CLS) position table
    pos_224_f32/_f64 [1,257,4]                      its interpolation to 224x224 (16x16)
    pos_280x210_f32/_f64 [1,301,4]                  and to 280x210 (20x15: H first)
  The f32 interpolations are PyTorch's float32 computation, as DINOv2 runs it (pos_embed.float()).
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fixture_io import write_safetensors  # noqa: E402

PATCH, POS_IMG, CHANS, DIM, DEPTH, HEADS, MLP_RATIO = 7, 35, 3, 24, 2, 3, 2.0
EPS = 1e-6
OFFSET = 0.1


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(DIM, 3 * DIM)
        self.proj = nn.Linear(DIM, DIM)

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, HEADS, c // HEADS).permute(2, 0, 3, 1, 4)
        weights = ((q * (c // HEADS) ** -0.5) @ k.transpose(-2, -1)).softmax(dim=-1)
        return self.proj((weights @ v).transpose(1, 2).reshape(b, n, c))


class LayerScale(nn.Module):
    def __init__(self):
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(DIM))

    def forward(self, x):
        return x * self.gamma


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(DIM, int(DIM * MLP_RATIO))
        self.fc2 = nn.Linear(int(DIM * MLP_RATIO), DIM)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1 = nn.LayerNorm(DIM, eps=EPS)
        self.attn = Attention()
        self.ls1 = LayerScale()
        self.norm2 = nn.LayerNorm(DIM, eps=EPS)
        self.mlp = Mlp()
        self.ls2 = LayerScale()

    def forward(self, x):
        x = x + self.ls1(self.attn(self.norm1(x)))
        return x + self.ls2(self.mlp(self.norm2(x)))


class PatchEmbed(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Conv2d(CHANS, DIM, kernel_size=PATCH, stride=PATCH)

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)


def interpolate_pos_encoding(pos_embed, h, w, patch):
    """DINOv2's interpolate_pos_encoding for an h x w image ("w" there is the image's dim 2)."""
    n = pos_embed.shape[1] - 1
    h0, w0 = h // patch, w // patch
    if h0 * w0 == n and h == w:
        return pos_embed
    m = int(math.sqrt(n))
    assert m * m == n
    dim = pos_embed.shape[-1]
    patches = F.interpolate(pos_embed[:, 1:].reshape(1, m, m, dim).permute(0, 3, 1, 2), mode="bicubic",
                            antialias=False, scale_factor=((h0 + OFFSET) / m, (w0 + OFFSET) / m))
    assert patches.shape[-2:] == (h0, w0)
    patches = patches.permute(0, 2, 3, 1).reshape(1, -1, dim)
    return torch.cat((pos_embed[:, :1], patches), dim=1)


class DinoVisionTransformer(nn.Module):
    def __init__(self, registers):
        super().__init__()
        grid = POS_IMG // PATCH
        self.cls_token = nn.Parameter(torch.zeros(1, 1, DIM))
        self.pos_embed = nn.Parameter(torch.zeros(1, 1 + grid * grid, DIM))
        self.register_tokens = nn.Parameter(torch.zeros(1, registers, DIM)) if registers else None
        self.mask_token = nn.Parameter(torch.zeros(1, DIM))
        self.patch_embed = PatchEmbed()
        self.blocks = nn.ModuleList([Block() for _ in range(DEPTH)])
        self.norm = nn.LayerNorm(DIM, eps=EPS)

    def forward(self, images):
        b, _, h, w = images.shape
        x = torch.cat((self.cls_token.expand(b, -1, -1), self.patch_embed(images)), dim=1)
        x = x + interpolate_pos_encoding(self.pos_embed, h, w, PATCH)
        if self.register_tokens is not None:
            x = torch.cat((x[:, :1], self.register_tokens.expand(b, -1, -1), x[:, 1:]), dim=1)
        for block in self.blocks:
            x = block(x)
        return self.norm(x)[:, 0]


def randomize(model, gen):
    """Weights far from an initialisation (sharp attention, LayerNorm and LayerScale away from 1)."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("gamma") or (p.dim() == 1 and "norm" in name and name.endswith("weight")):
                p.copy_(1 + 0.3 * torch.randn(p.shape, generator=gen))
            elif p.dim() == 1:
                p.copy_(0.2 * torch.randn(p.shape, generator=gen))
            elif name in ("cls_token", "pos_embed", "register_tokens", "mask_token"):
                p.copy_(0.5 * torch.randn(p.shape, generator=gen))
            else:
                p.copy_(1.5 / math.sqrt(p[0].numel()) * torch.randn(p.shape, generator=gen))


def hf_names(state):
    """The official names -> Hugging Face Dinov2Model's (query / key / value split)."""
    out = {}
    top = {"cls_token": "embeddings.cls_token", "pos_embed": "embeddings.position_embeddings",
           "register_tokens": "embeddings.register_tokens", "mask_token": "embeddings.mask_token",
           "patch_embed.proj.weight": "embeddings.patch_embeddings.projection.weight",
           "patch_embed.proj.bias": "embeddings.patch_embeddings.projection.bias",
           "norm.weight": "layernorm.weight", "norm.bias": "layernorm.bias"}
    inside = {"attn.proj": "attention.output.dense", "ls1.gamma": "layer_scale1.lambda1",
              "ls2.gamma": "layer_scale2.lambda1"}
    for name, value in state.items():
        if name in top:
            out[top[name]] = value
            continue
        _, index, rest = name.split(".", 2)
        layer = f"encoder.layer.{index}."
        if rest.startswith("attn.qkv."):
            for part, chunk in zip(("query", "key", "value"), np.split(value, 3, axis=0)):
                out[layer + "attention.attention." + part + "." + rest.split(".")[-1]] = chunk
            continue
        for official, hf in inside.items():
            if rest.startswith(official):
                rest = hf + rest[len(official):]
        out[layer + rest] = value
    return out


def photos(size, gen):
    """Two of scikit-image's sample photos, resized to size x size and normalised as ImageNet
    inputs; noise when scikit-image is missing."""
    try:
        from skimage import data, transform
    except ImportError:
        print("scikit-image not found: the images are noise")
        return torch.randn(2, CHANS, size, size, generator=gen)
    out = []
    for photo in (data.astronaut(), data.coffee()):
        resized = transform.resize(photo, (size, size), anti_aliasing=True)  # float64 in [0, 1]
        mean, std = np.array([0.485, 0.456, 0.406]), np.array([0.229, 0.224, 0.225])
        out.append(((resized - mean) / std).transpose(2, 0, 1))
    return torch.tensor(np.stack(out), dtype=torch.float32)


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures",
                                                                   "dinov2")
    os.makedirs(out_dir, exist_ok=True)
    gen = torch.Generator().manual_seed(20261127)
    ref = {"images_28": photos(28, gen).numpy(), "images_42": photos(42, gen).numpy()}

    base = DinoVisionTransformer(registers=0)
    randomize(base, gen)
    for registers, suffix in ((0, ""), (4, "_reg4")):
        model = DinoVisionTransformer(registers)
        model.load_state_dict(base.state_dict(), strict=False)  # the same weights, plus the registers
        if registers:
            with torch.no_grad():
                model.register_tokens.copy_(0.5 * torch.randn(model.register_tokens.shape, generator=gen))
        torch.save(model.state_dict(), os.path.join(out_dir, f"dinov2{suffix}.pth"))
        state = {n: t.detach().numpy().copy() for n, t in model.state_dict().items()}
        write_safetensors(os.path.join(out_dir, f"dinov2{suffix}_hf.safetensors"), hf_names(state),
                          {"format": "pt"})
        model = model.double()
        with torch.no_grad():
            for size in (28, 42):
                ref[f"features{suffix}_{size}"] = model(torch.tensor(ref[f"images_{size}"]).double()).numpy()

    table = torch.randn(1, 1370, 4, generator=gen)
    for name, (h, w) in (("224", (224, 224)), ("280x210", (280, 210))):
        ref["pos_" + name + "_f32"] = interpolate_pos_encoding(table, h, w, 14).numpy()
        ref["pos_" + name + "_f64"] = interpolate_pos_encoding(table.double(), h, w, 14).numpy()
    ref["pos_table"] = table.numpy()
    write_safetensors(os.path.join(out_dir, "reference.safetensors"), ref)
    total = sum(os.path.getsize(os.path.join(out_dir, f)) for f in os.listdir(out_dir))
    print(f"wrote {out_dir}: {len(ref)} reference tensors, {total} bytes in all")


if __name__ == "__main__":
    main()
