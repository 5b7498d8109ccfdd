#!/usr/bin/python3
"""Writes tests/fixtures/splits/*.txt: what NumPy's legacy RandomState and CPython's set give
for the draws the GCD reference makes, so the C++ ports in data/numpy_random.h,
data/python_set_order.h and data/gcd_split.h can be checked bit for bit without Python.

Run by hand with the system interpreter (numpy 1.24, CPython 3.11 here):
    /usr/bin/python3 tools/make_split_fixtures.py

Long lists are stored as their length, first values and a hash: FNV-1a 64 over the
little-endian int64 bytes of every value (tests/data/split_fixtures.h computes the same).
"""
import os
import sys

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tests', 'fixtures', 'splits')
SHOWN = 8


def fnv1a64(values):
    h = 0xcbf29ce484222325
    for v in values:
        for b in int(v).to_bytes(8, 'little', signed=True):
            h ^= b
            h = (h * 0x100000001b3) & 0xffffffffffffffff
    return h


def summary(values):
    values = [int(v) for v in values]
    return f'{len(values)} {fnv1a64(values)} ' + ' '.join(str(v) for v in values[:SHOWN])


def numpy_choice_lines():
    # `choice seed n size : count hash first...` for np.random.seed(seed);
    # np.random.choice(range(n), size, replace=False), as data_utils.subsample_instances does.
    cases = [(0, 1, 1), (0, 2, 1), (0, 10, 5), (1, 10, 10), (7, 17, 3), (0, 1000, 100),
             (12345, 5000, 2500), (4294967295, 300, 150), (0, 25000, 12500), (0, 40000, 20000),
             (0, 3000, 0)]
    lines = []
    for seed, n, size in cases:
        np.random.seed(seed)
        idx = np.random.choice(range(n), replace=False, size=(size,))
        lines.append(f'choice {seed} {n} {size} : {summary(idx)}')
    np.random.seed(0)
    classes = np.sort(np.random.choice(range(1000), size=(100,), replace=False))
    lines.append('imagenet100 : ' + ' '.join(str(int(c)) for c in classes))
    return lines


def set_difference_lines():
    # `setdiff n removed_seed removed_count : count hash first...` for
    # list(set(np.array(range(n))) - set(removed)) with removed = permutation prefix, as the
    # reference builds its unlabelled set. Sizes cover both CPython code paths (copy-and-discard
    # when len(a) >> 2 > len(b)) and both growth rules (x4 up to 50000 entries, x2 beyond); the
    # last three give a non-ascending order (table smaller than the largest value).
    cases = [(10, 5), (100, 30), (1000, 100), (1000, 250), (1000, 249), (8144, 2035), (8144, 2037),
             (50000, 12500), (50000, 20000), (127115, 31779), (127115, 31777), (200000, 0), (7, 7),
             (140000, 70000), (140000, 100000), (3000, 2950)]
    lines = []
    for n, r in cases:
        np.random.seed(0)
        removed = np.random.permutation(n)[:r]
        order = list(set(np.array(range(n))) - set(removed))
        lines.append(f'setdiff {n} {r} : {summary(order)}')
    return lines


def synthetic_class(i, num_classes):
    # Class of training image i in the synthetic datasets of the split fixture.
    return (i * 7 + i // 3) % num_classes


def gcd_split_lines():
    # The reference's labelled / unlabelled index lists for synthetic datasets, built with the
    # reference's own steps: subsample_classes keeps known-class images in order,
    # subsample_instances draws np.random.choice after np.random.seed(0), and the unlabelled
    # set is set(all) - set(labelled). 'mask' datasets (CUB, Aircraft, Herbarium) subsample
    # with a boolean mask (ascending order); 'index' datasets (SCars, CIFAR, ImageNet) index
    # with the arrays (draw order, then set iteration order).
    lines = []
    for n, num_classes, old in [(60, 6, [4, 0, 2]), (5000, 10, [0, 1, 2, 3, 4]), (9000, 20, [19, 3, 7, 11, 0])]:
        targets = np.array([synthetic_class(i, num_classes) for i in range(n)])
        uq = np.array(range(n))
        cls_idxs = [x for x, t in enumerate(targets) if t in old]
        old_uq = uq[cls_idxs]
        np.random.seed(0)
        pick = np.random.choice(range(len(old_uq)), replace=False, size=(int(0.5 * len(old_uq)),))
        for mode in ('mask', 'index'):
            if mode == 'mask':
                mask = np.zeros(len(old_uq)).astype('bool')
                mask[pick] = True
                labelled = old_uq[mask]
            else:
                labelled = old_uq[pick]
            unl = np.array(list(set(uq) - set(labelled)))
            if mode == 'mask':
                mask = np.zeros(n).astype('bool')
                mask[unl] = True
                unl = uq[mask]
            else:
                unl = uq[unl]
            head = f'split {mode} {n} {num_classes} ' + ','.join(str(c) for c in old)
            lines.append(f'{head} labelled : {summary(labelled)}')
            lines.append(f'{head} unlabelled : {summary(unl)}')
    return lines


def main():
    os.makedirs(OUT, exist_ok=True)
    header = [f'# written by tools/make_split_fixtures.py (numpy {np.__version__}, '
              f'python {sys.version.split()[0]})']
    for name, lines in [('numpy_choice.txt', numpy_choice_lines()),
                        ('set_difference.txt', set_difference_lines()),
                        ('gcd_split.txt', gcd_split_lines())]:
        with open(os.path.join(OUT, name), 'w') as f:
            f.write('\n'.join(header + lines) + '\n')


if __name__ == '__main__':
    main()
