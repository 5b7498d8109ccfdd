#!/usr/bin/python3
"""Writes tests/fixtures/cifar/: tiny CIFAR-10 / CIFAR-100 python-version batches, pickled the way
the real files are read (dicts with bytes keys, b'data' a uint8 [N, 3072] array, protocol 2), for
the CIFAR pickle reader test. Pixel values stay below 128 to keep the files small.

    /usr/bin/python3 tools/make_cifar_pickle_fixtures.py
"""
import os
import pickle

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tests', 'fixtures', 'cifar')


def batch(first_image, labels, label_key):
    n = len(labels)
    data = (np.arange(n * 3072).reshape(n, 3072) * 7 + first_image * 13) % 128
    return {b'batch_label': b'fixture', label_key: labels, b'data': data.astype(np.uint8),
            b'filenames': [b'img%d.png' % (first_image + i) for i in range(n)]}


def main():
    os.makedirs(os.path.join(OUT, 'cifar-10-batches-py'), exist_ok=True)
    os.makedirs(os.path.join(OUT, 'cifar-100-python'), exist_ok=True)
    for b in range(5):
        with open(os.path.join(OUT, 'cifar-10-batches-py', f'data_batch_{b + 1}'), 'wb') as f:
            pickle.dump(batch(b, [(3 * b + 1) % 10], b'labels'), f, protocol=2)
    with open(os.path.join(OUT, 'cifar-100-python', 'train'), 'wb') as f:
        d = batch(0, [99, 42], b'fine_labels')
        d[b'coarse_labels'] = [19, 7]
        pickle.dump(d, f, protocol=2)


if __name__ == '__main__':
    main()
