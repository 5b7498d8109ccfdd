#!/bin/bash
# Makes models/fmnist_pairs_vit.safetensors, the transferred backbone of the fmnist-pairs
# benchmark (docs/fmnist-pairs.md): a small ViT (56 × 56 grey input, patch 14, so 16 tokens as
# the demo's 28 / 7; width 64, 4 blocks) pretrained without labels by ./mcdl_pretrain (SimCLR) on
# fmnist-pairs-pretrain, whose images are composed only from the pretraining pool of garments:
# no garment of fmnist-pairs' training or test images is in them.
#
# The demo backbone's recipe, except that a crop keeps at least half of the canvas
# (--crop-scale-min 0.5): a smaller crop can hold one garment alone, and InfoNCE would then pull
# the image's two garments onto each other. 40 epochs over the 24,000 images: the benchmark's
# calibration (docs/fmnist-pairs.md) found that a longer pretraining widens SimGCD's lead over
# k-means (10 epochs: 10 points, 20: 14, 40: the committed file's). About 20 minutes on two
# cores.
#
#   DATA_ROOT (Fashion-MNIST's idx files; default: the Debian package's),
#   OUT (default: the committed file)
#
# Two threads, always: the CPU backend's sums depend on the thread count, so the file is
# reproducible only with the same count.
set -euo pipefail
data_root=${DATA_ROOT:-/usr/share/datasets/fashion-mnist}
out=${OUT:-models/fmnist_pairs_vit.safetensors}
OMP_NUM_THREADS=2 ./mcdl_pretrain fmnist-pairs-pretrain --data-root "$data_root" \
  --model img=56,patch=14,dim=64,depth=4,heads=4,chans=1 --device cpu --precision fp32 \
  --epochs 40 --warmup-epochs 4 --batch-size 256 --lr 1e-3 --weight-decay 0.05 --temperature 0.2 \
  --crop-scale-min 0.5 --seed 0 --progress false -o "$out"
