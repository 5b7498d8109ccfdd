#!/usr/bin/env python3
"""Writes the evaluation and k-means test fixtures in tests/fixtures/eval/.

  hungarian.txt       scipy.optimize.linear_sum_assignment on random real matrices (no ties),
                      square and rectangular, minimised and maximised.
  cluster_acc.txt     split_cluster_acc_v1 / v2 / v2b re-typed from the GCD and SimGCD
                      repositories (project_utils/cluster_and_log_utils.py,
                      util/cluster_and_log_utils.py) on random label sets, many with tied
                      contingency entries, plus the v2 class -> cluster map (ind_map).
  kmeans_blobs.txt    float32 points from sklearn's make_blobs and the inertia of sklearn's
                      KMeans(n_clusters=k, n_init=10, random_state=0) on them.

Plain whitespace-separated text, one record per block (see the readers in tests/mcdl/).
Run by hand from anywhere: /usr/bin/python3 tools/make_eval_fixtures.py
"""
import os

import numpy as np
from scipy.optimize import linear_sum_assignment
from sklearn.cluster import KMeans
from sklearn.datasets import make_blobs

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "eval")


def cluster_acc(y_true, y_pred):
    y_true = y_true.astype(int)
    D = max(y_pred.max(), y_true.max()) + 1
    w = np.zeros((D, D), dtype=int)
    for i in range(y_pred.size):
        w[y_pred[i], y_true[i]] += 1
    ind = np.vstack(linear_sum_assignment(w.max() - w)).T
    return sum([w[i, j] for i, j in ind]) * 1.0 / y_pred.size


def split_cluster_acc_v1(y_true, y_pred, mask):
    weight = mask.mean()
    old_acc = cluster_acc(y_true[mask], y_pred[mask])
    new_acc = cluster_acc(y_true[~mask], y_pred[~mask])
    return weight * old_acc + (1 - weight) * new_acc, old_acc, new_acc


def v2_table(y_true, y_pred):
    D = max(y_pred.max(), y_true.max()) + 1
    w = np.zeros((D, D), dtype=int)
    for i in range(y_pred.size):
        w[y_pred[i], y_true[i]] += 1
    ind = np.vstack(linear_sum_assignment(w.max() - w)).T
    return w, ind, {j: i for i, j in ind}


def split_cluster_acc_v2(y_true, y_pred, mask):
    old_classes_gt = set(y_true[mask])
    new_classes_gt = set(y_true[~mask])
    w, ind, ind_map = v2_table(y_true, y_pred)
    total_acc = sum([w[i, j] for i, j in ind]) * 1.0 / y_pred.size
    old_acc = 0
    total_old_instances = 0
    for i in old_classes_gt:
        old_acc += w[ind_map[i], i]
        total_old_instances += sum(w[:, i])
    old_acc /= total_old_instances
    new_acc = 0
    total_new_instances = 0
    for i in new_classes_gt:
        new_acc += w[ind_map[i], i]
        total_new_instances += sum(w[:, i])
    new_acc /= total_new_instances
    return total_acc, old_acc, new_acc


def split_cluster_acc_v2_balanced(y_true, y_pred, mask):
    old_classes_gt = set(y_true[mask])
    new_classes_gt = set(y_true[~mask])
    w, ind, ind_map = v2_table(y_true, y_pred)
    old_acc = np.zeros(len(old_classes_gt))
    total_old_instances = np.zeros(len(old_classes_gt))
    for idx, i in enumerate(old_classes_gt):
        old_acc[idx] += w[ind_map[i], i]
        total_old_instances[idx] += sum(w[:, i])
    new_acc = np.zeros(len(new_classes_gt))
    total_new_instances = np.zeros(len(new_classes_gt))
    for idx, i in enumerate(new_classes_gt):
        new_acc[idx] += w[ind_map[i], i]
        total_new_instances[idx] += sum(w[:, i])
    total_acc = np.concatenate([old_acc, new_acc]) / np.concatenate([total_old_instances, total_new_instances])
    old_acc /= total_old_instances
    new_acc /= total_new_instances
    return total_acc.mean(), old_acc.mean(), new_acc.mean()


def ints(values):
    return " ".join(str(int(v)) for v in values)


def reals(values):
    return " ".join(repr(float(v)) for v in values)


def write_hungarian(rng):
    lines = ["# rows cols maximize / cost row-major / optimal total / column of each row (-1: none)"]
    shapes = [(1, 1), (3, 3), (8, 8), (12, 12), (25, 25), (9, 14), (14, 9), (1, 6), (6, 1), (20, 30), (30, 20)]
    for rows, cols in shapes:
        for maximize in (0, 1):
            cost = np.round(rng.uniform(-10.0, 10.0, size=(rows, cols)), 4)
            r, c = linear_sum_assignment(cost, maximize=bool(maximize))
            col_for_row = -np.ones(rows, dtype=int)
            col_for_row[r] = c
            lines += [f"{rows} {cols} {maximize}", reals(cost.ravel()), repr(float(cost[r, c].sum())), ints(col_for_row)]
    with open(os.path.join(OUT_DIR, "hungarian.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def write_cluster_acc(rng):
    lines = ["# n / y_true / y_pred / is_old / v1 all old new / v2 all old new / v2b all old new / v2 class->cluster"]
    # (samples, classes, old classes, clusters, fraction predicted right): low fractions and
    # few samples give many tied contingency entries, which exercise SciPy's tie-breaking.
    cases = [(12, 4, 2, 4, 0.5), (30, 5, 2, 5, 0.3), (40, 6, 3, 8, 0.6), (60, 10, 5, 10, 0.2),
             (100, 8, 4, 12, 0.7), (200, 20, 10, 20, 0.4), (500, 30, 15, 30, 0.8), (80, 12, 6, 6, 0.5),
             (150, 25, 12, 25, 0.1), (300, 50, 25, 50, 0.5)]
    for n, classes, old, clusters, right in cases:
        y_true = rng.integers(0, classes, size=n)
        perm = rng.permutation(max(classes, clusters))
        y_pred = np.where(rng.uniform(size=n) < right, perm[y_true] % clusters, rng.integers(0, clusters, size=n))
        mask = y_true < old
        # The reference's mask is per sample: one case marks samples at random, so that a class
        # occurs among both old and new samples.
        if n == 80:
            mask = rng.uniform(size=n) < 0.5
        w, ind, ind_map = v2_table(y_true, y_pred)
        lines += [str(n), ints(y_true), ints(y_pred), ints(mask), reals(split_cluster_acc_v1(y_true, y_pred, mask)),
                  reals(split_cluster_acc_v2(y_true, y_pred, mask)),
                  reals(split_cluster_acc_v2_balanced(y_true, y_pred, mask)),
                  ints(ind_map[c] for c in range(w.shape[0]))]
    with open(os.path.join(OUT_DIR, "cluster_acc.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def write_kmeans_blobs():
    lines = ["# n dim k / points row-major (float32) / sklearn KMeans(k, n_init=10, random_state=0) inertia / blob of each point"]
    for n, dim, k, std in [(200, 8, 6, 2.0), (300, 12, 8, 3.0)]:
        x, y = make_blobs(n_samples=n, n_features=dim, centers=k, cluster_std=std, random_state=1)
        x = x.astype(np.float32)
        km = KMeans(n_clusters=k, n_init=10, random_state=0).fit(x.astype(np.float64))
        lines += [f"{n} {dim} {k}", " ".join(str(v) for v in x.ravel()), repr(float(km.inertia_)), ints(y)]
    with open(os.path.join(OUT_DIR, "kmeans_blobs.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    rng = np.random.default_rng(20240601)
    write_hungarian(rng)
    write_cluster_acc(rng)
    write_kmeans_blobs()


if __name__ == "__main__":
    main()
