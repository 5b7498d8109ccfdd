// The GCD baseline of ./mcdl_train --method gcd (Vaze et al., CVPR 2022; gcd_reference.md §3):
//
// 1. Contrastive fine-tuning (contrastive_training.py): the backbone (blocks ≥ grad_from_block
//    trained) with GCD's own projection head (layers/gcd_head.h), two train-transform views per
//    sample from SimGCD's balanced sampler (the same in GCD), the loss of gcd_loss below, SGD
//    (lr 0.1, momentum 0.9) with weight decay on EVERY trained parameter (GCD builds no
//    parameter groups: biases, LayerNorm parameters and the head's weight_v all decay), cosine
//    annealing to lr·1e-3 stepped per epoch.
// 2. Features (extract_features.py): the backbone's CLS features of every training image
//    (labelled and unlabelled) through the test transform, L2-normalised.
// 3. Semi-supervised k-means (k_means.py): K = the dataset's class count, the labelled images
//    fixed to their classes, 100 restarts of at most 200 iterations by default
//    (--kmeans-restarts / --kmeans-iters), scored with v2 (and v2b where the dataset reports it)
//    on the unlabelled images.
//
// Deviation from the reference: GCD runs sklearn k-means on the backbone features after every
// epoch and keeps the model with the best Old accuracy on the TEST set for stages 2-3; that
// selection reads test labels. Here, as SimGCD's README recommends, the last epoch is used, and
// each epoch reports its losses only (k-means runs once, after the last epoch).
//
// The run directory matches the other methods: config.json, split.csv, one metrics row per
// epoch (epoch, lr, loss, contrastive, supcon, iterations, all, old, new [, v2b], seconds; the
// accuracies are NaN until the final row), predictions.csv of the unlabelled images, the final
// k-means centres in centres.safetensors (mcdl/cluster_centres.h, for mcdl_predict), and
// checkpoints/last.safetensors ("model.<DINO name>" for the backbone, "projection_head.<name>"
// for the head, as GCD saves the two, plus "optimizer.*"), so --resume continues a run.
//
// --method gcd+mcdl plugs MCDL in (mcdl/gcd_mcdl.h): a strong view, MCDL's losses added to
// gcd_loss, the k-means classifier refitted before the first epoch and after each one, the
// metrics columns l_sup, l_semi, l_self (after supcon) and high, medium, low, high_pseudo_acc,
// medium_pseudo_acc (after the accuracies) every epoch, and "bank_weak.*", "bank_strong.*" and
// "classifier.centres" in the checkpoint. Stages 2 and 3 stay GCD's.
#pragma once
#include <cstdint>
#include <vector>

#include "engine/tensor.h"
#include "mcdl/train_config.h"
#include "mcdl/trainer.h"

namespace mcdl {

struct GcdLossTerms {
  Tensor total;        // (1 − sup_weight)·contrastive + sup_weight·supcon, 0-dim
  Tensor contrastive;  // info_nce_loss over all 2B rows
  Tensor supcon;       // supcon_loss over the labelled samples' rows of both views (0 without any)
};

// GCD's loss on the head outputs [2B, out] (view 1's rows, then view 2's; not normalised):
// z = l2_normalize(outputs); contrastive = info_nce_loss(z, temperature) (GCD's
// info_nce_logits + CrossEntropyLoss; temperature 1.0 by default); supcon = SupConLoss()
// (τ = base τ = 0.07, contrast_mode 'all') over z's labelled rows of view 1 then view 2, with
// their labels. labels [B] (only labelled entries are read), labelled [B] (0/1).
GcdLossTerms gcd_loss(const Tensor& outputs, const std::vector<int64_t>& labels, const std::vector<uint8_t>& labelled,
                      double sup_weight, double temperature);

// Runs `config` (method "gcd" or "gcd+mcdl", validated first) into config.out, or with `resume`
// continues the run there from checkpoints/last.safetensors (see resume_config). run_training
// dispatches here.
RunSummary run_gcd_training(const TrainConfig& config, bool resume);

}  // namespace mcdl
