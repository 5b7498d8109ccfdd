#!/usr/bin/env python3
"""torchvision/Pillow timings of the stages tools/bench_augment.cpp measures (images/s, median of 3
runs; "all" = one worker process per CPU, as DataLoader workers):
  - RandomCrop(224) + RandomHorizontalFlip + ToTensor + Normalize, from a cached 341x256 PIL image;
  - the same with RandAugment(2, 9) after the flip;
  - decode a 500x375 JPEG (quality 90) with PIL + Resize(256, BICUBIC).
Prints nothing but a note when torch/torchvision/Pillow are missing (the Makefile calls it with '-').
"""
import os
import statistics
import sys
import tempfile
import time

try:
    import numpy as np
    import torch
    import torchvision.transforms as T
    from PIL import Image
except ImportError as e:  # pragma: no cover
    print(f"bench_augment_torch.py: skipped ({e})")
    sys.exit(0)

NORMALIZE = T.Normalize(mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225))
WEAK = T.Compose([T.RandomCrop(224), T.RandomHorizontalFlip(), T.ToTensor(), NORMALIZE])
STRONG = T.Compose([T.RandomCrop(224), T.RandomHorizontalFlip(), T.RandAugment(2, 9), T.ToTensor(), NORMALIZE])
RESIZE = T.Resize(256, interpolation=T.InterpolationMode.BICUBIC)


def synthetic(h, w, seed):
    rng = np.random.default_rng(seed)
    fx, fy = rng.uniform(0.02, 0.1, size=2)
    y, x = np.mgrid[0:h, 0:w]
    a = np.stack([128 + 80 * np.sin(fx * x * (c + 1) + fy * y) + 30 * (rng.random((h, w)) - 0.5)
                  for c in range(3)], axis=-1)
    return Image.fromarray(np.clip(a, 0, 255).astype(np.uint8), "RGB")


_STATE = {}


def _init(kind, payload):
    torch.set_num_threads(1)
    _STATE["kind"], _STATE["payload"] = kind, payload


def _work(indices):
    kind, payload = _STATE["kind"], _STATE["payload"]
    for i in indices:
        if kind == "decode":
            RESIZE(Image.open(payload[i % len(payload)]).convert("RGB"))
        else:
            (STRONG if kind == "strong" else WEAK)(payload[i % len(payload)])
    return len(indices)


def rate(kind, payload, count, workers, repeats=3):
    rates = []
    if workers == 1:
        _init(kind, payload)
        for _ in range(repeats):
            start = time.perf_counter()
            _work(range(count))
            rates.append(count / (time.perf_counter() - start))
    else:
        import multiprocessing as mp
        with mp.get_context("fork").Pool(workers, initializer=_init, initargs=(kind, payload)) as pool:
            chunks = [list(range(i, count, workers)) for i in range(workers)]
            pool.map(_work, chunks)  # warm-up
            for _ in range(repeats):
                start = time.perf_counter()
                pool.map(_work, chunks)
                rates.append(count / (time.perf_counter() - start))
    return statistics.median(rates)


def main():
    torch.set_num_threads(1)
    cores = os.cpu_count() or 1
    cached = [synthetic(256, 341, i) for i in range(32)]
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for i in range(16):
            path = os.path.join(tmp, f"{i}.jpg")
            synthetic(375, 500, 100 + i).save(path, quality=90)
            files.append(path)
        print(f"torchvision {__import__('torchvision').__version__} / Pillow {Image.__version__}, images/s "
              f"(median of 3 runs; {cores} worker processes for 'all')")
        print(f"{'stage':52s} {'1 process':>10s} {'all':>10s}")
        for name, kind, payload, count in [
                ("crop224+flip+normalize (from cached 256x341 PIL)", "weak", cached, 256),
                ("crop224+flip+RandAugment(2,9)+normalize", "strong", cached, 128),
                ("decode 500x375 JPEG + Resize(256, BICUBIC)", "decode", files, 64)]:
            print(f"{name:52s} {rate(kind, payload, count, 1):10.0f} {rate(kind, payload, count, cores):10.0f}")


if __name__ == "__main__":
    main()
