#!/usr/bin/python3
"""Writes tests/fixtures/augment/: small test images, and what Pillow 9.4 / torchvision 0.14 make of
them (bicubic resizes, center crops, every RandAugment op, ToTensor+Normalize). The C++ tests
(tests/data/test_resize.cpp, test_transforms.cpp, test_randaugment.cpp) compare bit-exactly.

Run by hand with Debian 12's /usr/bin/python3 (python3-pil 9.4.0, python3-torchvision 0.14.1):
    /usr/bin/python3 tools/make_augment_fixtures.py
Outputs are lossless PNGs (RGB or 8-bit grey) plus index.txt, one case per line:
    resize  INPUT CH OUT_W OUT_H OUTPUT        Image.resize((w, h), BICUBIC)
    shorter INPUT CH SIZE OUTPUT               T.Resize(SIZE, BICUBIC)
    center  INPUT CH H W OUTPUT                F.center_crop(img, [H, W])
    test    INPUT CH S OUTPUT                  Resize(int(S/0.875), BICUBIC) + CenterCrop(S)
    op      INPUT CH NAME MAGNITUDE OUTPUT     autoaugment._apply_op(img, NAME, MAGNITUDE, NEAREST, None)
    magnitude NAME BIN BINS H W VALUE          RandAugment._augmentation_space(BINS, (H, W))[NAME][0][BIN]
    normalize INPUT CH OUTPUT                  float32 CHW of Normalize(ToTensor(img)) (imagenet / 0.2860,0.3530)
Magnitudes are written with repr(), so C++ strtod reads the same double.
"""
import math
import os

import numpy as np
import torch
import torchvision.transforms as T
import torchvision.transforms.functional as F
from PIL import Image
from torchvision.transforms import InterpolationMode
from torchvision.transforms.autoaugment import RandAugment, _apply_op

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "augment")


def structured(h, w, seed, lo=0, hi=255, channels=3):
    """Gradients, a disc, stripes and noise: every op changes it, no two rows or columns alike."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    planes = []
    for c in range(channels):
        v = 0.5 + 0.4 * np.sin(x / (3.0 + c) + y / 5.0) * np.cos(y / (4.0 + c))
        v += 0.3 * (((x - w / 3) ** 2 + (y - h / 2) ** 2) < (min(h, w) / 3) ** 2)
        v += 0.15 * ((x.astype(int) // 4 + c) % 2)
        v += rng.normal(0, 0.08, size=(h, w))
        planes.append(v)
    a = np.stack(planes, axis=-1)
    a = (a - a.min()) / (a.max() - a.min())
    a = np.round(lo + a * (hi - lo)).astype(np.uint8)
    return Image.fromarray(a[..., 0] if channels == 1 else a, "L" if channels == 1 else "RGB")


def main():
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        os.remove(os.path.join(OUT, f))
    inputs = {
        "rgb": structured(23, 37, 1),
        "gray": structured(23, 37, 2, channels=1),
        "lowc": structured(31, 29, 3, lo=60, hi=180),
        "square": structured(32, 32, 4),
        "photo": structured(80, 120, 5),
    }
    for name, im in inputs.items():
        im.save(os.path.join(OUT, f"{name}.png"))
    ch = {n: (1 if im.mode == "L" else 3) for n, im in inputs.items()}
    lines = []
    counter = [0]

    def save(im, stem):
        counter[0] += 1
        fname = f"{stem}.png"
        im.save(os.path.join(OUT, fname))
        return fname

    # ---- resize
    resizes = [("photo", 30, 20), ("photo", 47, 31), ("photo", 121, 80), ("photo", 120, 33), ("photo", 53, 80),
               ("photo", 150, 101), ("photo", 17, 123), ("photo", 9, 7), ("rgb", 90, 70), ("rgb", 5, 3),
               ("rgb", 1, 1), ("gray", 50, 11), ("gray", 13, 40), ("square", 32, 32)]
    for src, w, h in resizes:
        out = inputs[src].resize((w, h), Image.BICUBIC)
        lines.append(f"resize {src}.png {ch[src]} {w} {h} {save(out, f'resize_{src}_{w}x{h}')}")
    for src, size in [("photo", 32), ("photo", 80), ("photo", 56), ("rgb", 48), ("rgb", 16), ("gray", 20),
                      ("lowc", 30)]:
        out = T.Resize(size, interpolation=InterpolationMode.BICUBIC)(inputs[src])
        lines.append(f"shorter {src}.png {ch[src]} {size} {save(out, f'shorter_{src}_{size}')}")

    # ---- crops and the test pipeline
    for src, h, w in [("rgb", 20, 20), ("rgb", 22, 36), ("rgb", 23, 37), ("rgb", 30, 40), ("rgb", 10, 50),
                      ("gray", 4, 7)]:
        out = F.center_crop(inputs[src], [h, w])
        lines.append(f"center {src}.png {ch[src]} {h} {w} {save(out, f'center_{src}_{h}x{w}')}")
    for src, s in [("photo", 28), ("photo", 56), ("gray", 14)]:
        out = T.Compose([T.Resize(int(s / 0.875), interpolation=InterpolationMode.BICUBIC), T.CenterCrop(s)])(
            inputs[src])
        lines.append(f"test {src}.png {ch[src]} {s} {save(out, f'test_{src}_{s}')}")

    # ---- RandAugment ops, magnitudes exactly as RandAugment.forward computes them
    ra = RandAugment()
    signed_ops = ["ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate", "Brightness", "Color", "Contrast",
                  "Sharpness"]
    colour_ops = {"Brightness", "Color", "Contrast", "Sharpness", "Posterize", "Solarize", "AutoContrast",
                  "Equalize"}

    def add_op(src, op, magnitude, tag):
        out = _apply_op(inputs[src], op, magnitude, interpolation=InterpolationMode.NEAREST, fill=None)
        lines.append(f"op {src}.png {ch[src]} {op} {magnitude!r} {save(out, f'op_{src}_{op}_{tag}')}")

    for src in ["rgb", "gray", "lowc"]:
        h, w = inputs[src].height, inputs[src].width
        space = ra._augmentation_space(31, (h, w))
        for op in signed_ops:
            if src == "lowc" and op not in colour_ops:
                continue
            for b in [9, 30]:
                m = float(space[op][0][b].item())
                add_op(src, op, m, f"p{b}")
                add_op(src, op, -m, f"m{b}")
        for bits in [0, 1, 4, 7, 8]:
            add_op(src, "Posterize", float(bits), f"{bits}")
        for thr in [0.0, 128.0, 178.5, 255.0, 256.0]:
            add_op(src, "Solarize", thr, f"{int(thr * 10)}")
        add_op(src, "AutoContrast", 0.0, "0")
        add_op(src, "Equalize", 0.0, "0")
        add_op(src, "Identity", 0.0, "0")
    # Large factors (blend extrapolation both ways), off-table angles and the Pillow rotate fast
    # paths, the float (non-16.16) affine path, translations past the border.
    for src in ["rgb", "gray"]:
        for op in ["Brightness", "Contrast", "Sharpness", "Color"]:
            add_op(src, op, 1.5, "x15")
            add_op(src, op, -1.5, "xm15")
        for angle in [45.0, -123.4, 90.0, 180.0, -90.0, 360.0]:
            add_op(src, "Rotate", angle, f"a{int(angle * 10)}")
        for op in ["ShearX", "ShearY"]:
            add_op(src, op, 1500.0, "big")
            add_op(src, op, -1500.0, "mbig")
        add_op(src, "TranslateX", 50.7, "far")
        add_op(src, "TranslateY", -7.9, "frac")
    for angle in [90.0, -90.0, 180.0, 270.0, 9.0]:
        add_op("square", "Rotate", angle, f"a{int(angle * 10)}")
    # A flat image: AutoContrast / Equalize identity paths, Contrast degenerate = the image.
    flat = Image.new("RGB", (7, 5), (90, 91, 92))
    inputs["flat"] = flat
    ch["flat"] = 3
    flat.save(os.path.join(OUT, "flat.png"))
    for op, m in [("AutoContrast", 0.0), ("Equalize", 0.0), ("Contrast", 0.27), ("Sharpness", -0.27)]:
        add_op("flat", op, m, "0")

    # ---- magnitude tables
    for (h, w) in [(23, 37), (224, 224), (256, 341), (28, 28), (1000, 7)]:
        for bins in [31, 10]:
            space = ra._augmentation_space(bins, (h, w))
            for op, (mags, _) in space.items():
                if mags.ndim == 0:
                    continue
                for b in range(bins):
                    lines.append(f"magnitude {op} {b} {bins} {h} {w} {float(mags[b].item())!r}")

    # ---- ToTensor + Normalize
    imagenet = T.Normalize(mean=torch.tensor((0.485, 0.456, 0.406)), std=torch.tensor((0.229, 0.224, 0.225)))
    grey = T.Normalize(mean=[0.2860], std=[0.3530])
    for src, norm in [("rgb", imagenet), ("gray", grey)]:
        t = norm(T.ToTensor()(inputs[src])).numpy().astype("<f4")
        fname = f"normalize_{src}.bin"
        t.tofile(os.path.join(OUT, fname))
        lines.append(f"normalize {src}.png {ch[src]} {fname}")

    with open(os.path.join(OUT, "index.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{counter[0]} images, {len(lines)} index lines in {OUT}")


if __name__ == "__main__":
    main()
