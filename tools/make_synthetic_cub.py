#!/usr/bin/env python3
"""Writes a synthetic copy of the CUB-200-2011 layout for timing full epochs without the real
dataset: ROOT/CUB_200_2011/{images.txt, image_class_labels.txt, train_test_split.txt, images/}
with CUB's counts (200 classes, 5,994 training and 5,794 test images) and CUB's typical image
size (500x375 JPEG, quality 90). Each image is its class's colour plus noise. Needs Pillow and
NumPy (a benchmark aid: the engine itself never runs Python).

  python3 tools/make_synthetic_cub.py /tmp/cub [--scale 1.0]
"""
import argparse
import os
from multiprocessing import Pool

import numpy as np
from PIL import Image

CLASSES, TRAIN, TEST = 200, 5994, 5794


def write_image(job):
    path, cls, index, width, height = job
    rng = np.random.default_rng(index)
    colour = np.array([(cls * 37) % 256, (cls * 87) % 256, (cls * 137) % 256], dtype=np.int16)
    pixels = colour + rng.integers(-40, 40, size=(height, width, 3), dtype=np.int16)
    Image.fromarray(pixels.clip(0, 255).astype(np.uint8)).save(path, quality=90)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("root")
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of CUB's image count to write")
    args = parser.parse_args()
    base = os.path.join(args.root, "CUB_200_2011")
    train, test = round(TRAIN * args.scale), round(TEST * args.scale)
    jobs, images, labels, split = [], [], [], []
    for index in range(train + test):
        cls = index % CLASSES + 1
        folder = f"{cls:03d}.Bird_{cls}"
        os.makedirs(os.path.join(base, "images", folder), exist_ok=True)
        name = f"{folder}/Bird_{index + 1}.jpg"
        jobs.append((os.path.join(base, "images", name), cls, index, 500, 375))
        images.append(f"{index + 1} {name}")
        labels.append(f"{index + 1} {cls}")
        split.append(f"{index + 1} {1 if index < train else 0}")
    for file, lines in (("images.txt", images), ("image_class_labels.txt", labels), ("train_test_split.txt", split)):
        with open(os.path.join(base, file), "w") as out:
            out.write("\n".join(lines) + "\n")
    with Pool() as pool:
        pool.map(write_image, jobs, chunksize=64)
    print(f"{base}: {train} training and {test} test images, {CLASSES} classes")


if __name__ == "__main__":
    main()
