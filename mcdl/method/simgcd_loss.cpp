#include "mcdl/method/simgcd_loss.h"

#include <cmath>
#include <set>

#include "engine/dispatch.h"
#include "engine/ops.h"

namespace mcdl {
namespace {

// A logit that removes its column from a softmax: exp underflows to exactly 0 in f32 and f64,
// yet it stays finite, so a zero target weight times its log-probability is 0, not NaN. The
// softmax over the other columns equals the one with the column dropped, as in SimGCD.
constexpr double masked_logit = -1e9;

// [rows.size(), n] of zeros with masked_logit at (k, columns[k]).
Tensor self_mask(const std::vector<int64_t>& columns, int64_t n, DType dtype, Device device) {
  const int64_t rows = static_cast<int64_t>(columns.size());
  std::vector<double> values(static_cast<size_t>(rows * n), 0.0);
  for (int64_t k = 0; k < rows; ++k)
    values[static_cast<size_t>(k * n + columns[static_cast<size_t>(k)])] = masked_logit;
  return from_vector<double>(values, {rows, n}).to(dtype).to(device);
}

void check_paired_rows(const char* op, const Tensor& x, const char* name) {
  check(x.defined(), op, ": ", name, " is undefined");
  check_floating(op, x);
  check(x.dim() == 2 && x.size(0) > 0 && x.size(0) % 2 == 0 && x.size(1) > 0, op, ": ", name,
        " must be [2B, C] with B > 0 (view 1's rows, then view 2's), got ", x.str());
}

}  // namespace

double teacher_temperature(const SimGCDLossConfig& config, int64_t epoch) {
  check(epoch >= 0 && epoch < config.epochs, "teacher_temperature: epoch ", epoch, " is outside [0, ", config.epochs,
        ")");
  const int64_t warmup = config.warmup_teacher_epochs;
  if (epoch >= warmup) return config.teacher_temp;
  // np.linspace(start, stop, num): start + i·(stop − start)/(num − 1), the last one exactly stop.
  if (epoch == warmup - 1 && warmup > 1) return config.teacher_temp;
  if (warmup == 1) return config.warmup_teacher_temp;
  const double step = (config.teacher_temp - config.warmup_teacher_temp) / static_cast<double>(warmup - 1);
  return static_cast<double>(epoch) * step + config.warmup_teacher_temp;
}

Tensor cross_view_distillation(const Tensor& logits, double student_temp, double teacher_temp,
                               const Tensor& teacher_logits) {
  check_paired_rows("cross_view_distillation", logits, "logits");
  const int64_t b = logits.size(0) / 2;
  if (teacher_logits.defined()) {
    check_same_dtype_device("cross_view_distillation", logits, teacher_logits);
    check(teacher_logits.shape() == logits.shape(), "cross_view_distillation: teacher logits ", teacher_logits.str(),
          " do not match logits ", logits.str());
  }
  const Tensor teacher = softmax((teacher_logits.defined() ? teacher_logits : logits).detach() / teacher_temp);
  // Row i of view 1 learns from the teacher of view 2 and vice versa: one mean over the 2B rows
  // is the average of the two pairs' means (both have B rows).
  const Tensor swapped = concat({slice(teacher, 0, b, 2 * b), slice(teacher, 0, 0, b)}, 0);
  return cross_entropy_soft(logits / student_temp, swapped);
}

Tensor mean_entropy_penalty(const Tensor& logits, double student_temp) {
  check(logits.defined() && logits.dim() == 2 && logits.size(0) > 0 && logits.size(1) > 0,
        "mean_entropy_penalty: logits must be [N, K] with N, K > 0, got ",
        logits.defined() ? logits.str() : std::string("undefined"));
  const Tensor mean_probs = mean(softmax(logits / student_temp), 0);
  return sum(mean_probs * log(mean_probs)) + std::log(static_cast<double>(logits.size(1)));
}

Tensor info_nce_loss(const Tensor& projections, double temperature) {
  check_paired_rows("info_nce_loss", projections, "projections");
  const int64_t n = projections.size(0), b = n / 2;
  const Tensor features = l2_normalize(projections);
  std::vector<int64_t> rows(static_cast<size_t>(n)), positives(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    rows[static_cast<size_t>(i)] = i;
    positives[static_cast<size_t>(i)] = i < b ? i + b : i - b;
  }
  const Tensor similarity = matmul(features, transpose(features, 0, 1)) / temperature;
  const Tensor logits = similarity + self_mask(rows, n, projections.dtype(), projections.device());
  return cross_entropy(logits, HostIndex(positives, projections.device()));
}

Tensor supcon_loss(const Tensor& features, const std::vector<int64_t>& labels, const std::vector<int64_t>& anchors,
                   double temperature, double base_temperature) {
  const char* op = "supcon_loss";
  check(features.defined() && features.dim() == 2, op, ": features must be [N, D], got ",
        features.defined() ? features.str() : std::string("undefined"));
  check_floating(op, features);
  const int64_t n = features.size(0), count = static_cast<int64_t>(anchors.size());
  check(static_cast<int64_t>(labels.size()) == n, op, ": ", labels.size(), " labels for features ", features.str());
  if (count == 0) return zeros({}, features.dtype(), features.device());
  // Row k of the weights: 1/|P(a)| on the positives of anchor a = anchors[k].
  std::set<int64_t> seen;
  std::vector<double> weights(static_cast<size_t>(count * n), 0.0);
  for (int64_t k = 0; k < count; ++k) {
    const int64_t a = anchors[static_cast<size_t>(k)];
    check(a >= 0 && a < n, op, ": anchor ", a, " is out of range for features ", features.str());
    check(seen.insert(a).second, op, ": anchor ", a, " is given twice");
    std::vector<int64_t> positives;
    for (int64_t p = 0; p < n; ++p)
      if (p != a && labels[static_cast<size_t>(p)] == labels[static_cast<size_t>(a)]) positives.push_back(p);
    check(!positives.empty(), op, ": anchor ", a, " (label ", labels[static_cast<size_t>(a)],
          ") has no positive among the ", n, " rows");
    for (int64_t p : positives) weights[static_cast<size_t>(k * n + p)] = 1.0 / static_cast<double>(positives.size());
  }
  const Device device = features.device();
  const Tensor anchor_features = index_select(features, HostIndex(anchors, device));
  const Tensor logits = matmul(anchor_features, transpose(features, 0, 1)) / temperature +
                        self_mask(anchors, n, features.dtype(), device);
  const Tensor targets = from_vector<double>(weights, {count, n}).to(features.dtype()).to(device);
  // cross_entropy_soft = mean over anchors of −Σ_p w_ap·log_softmax(logits)_ap.
  return cross_entropy_soft(logits, targets) * (temperature / base_temperature);
}

SimGCDLossTerms simgcd_loss(const Tensor& logits, const Tensor& projections, const std::vector<int64_t>& labels,
                            const std::vector<uint8_t>& labelled, int64_t epoch, const SimGCDLossConfig& config,
                            const Tensor& teacher_logits) {
  const char* op = "simgcd_loss";
  check_paired_rows(op, logits, "logits");
  check_paired_rows(op, projections, "projections");
  check_same_dtype_device(op, logits, projections);
  const int64_t b = logits.size(0) / 2;
  check(projections.size(0) == 2 * b, op, ": projections ", projections.str(), " do not match logits ", logits.str());
  check(static_cast<int64_t>(labels.size()) == b && static_cast<int64_t>(labelled.size()) == b, op, ": expected ", b,
        " labels and labelled flags for logits ", logits.str(), ", got ", labels.size(), " and ", labelled.size());

  // The labelled rows of view 1, then the same samples' rows of view 2 (SimGCD's
  // cat([x[mask_lab] for x in chunk(2)])), with their labels repeated.
  std::vector<int64_t> lab_rows, lab_labels;
  for (int64_t i = 0; i < b; ++i) {
    check(labelled[static_cast<size_t>(i)] <= 1, op, ": labelled flag ", int{labelled[static_cast<size_t>(i)]}, " at ",
          i, " is not 0 or 1");
    if (labelled[static_cast<size_t>(i)]) lab_rows.push_back(i);
  }
  const size_t lab_count = lab_rows.size();
  for (size_t k = 0; k < lab_count; ++k) lab_rows.push_back(lab_rows[k] + b);
  for (int64_t r : lab_rows) lab_labels.push_back(labels[static_cast<size_t>(r % b)]);

  const Device device = logits.device();
  const double w = config.sup_weight;
  SimGCDLossTerms t;
  if (lab_count == 0) {
    // No labelled row: SimGCD would take the mean of an empty set (NaN); these terms are 0.
    t.cls = zeros({}, logits.dtype(), device);
    t.supcon = zeros({}, logits.dtype(), device);
  } else {
    const HostIndex rows(lab_rows, device);
    t.cls = cross_entropy(index_select(logits, rows) / config.student_temp, HostIndex(lab_labels, device));
    std::vector<int64_t> every_row(lab_rows.size());
    for (size_t k = 0; k < every_row.size(); ++k) every_row[k] = static_cast<int64_t>(k);
    t.supcon = supcon_loss(l2_normalize(index_select(projections, rows)), lab_labels, every_row, config.supcon_temp,
                           config.supcon_base_temp);
  }
  t.cluster = cross_view_distillation(logits, config.student_temp, teacher_temperature(config, epoch), teacher_logits);
  t.memax = mean_entropy_penalty(logits, config.student_temp);
  t.contrastive = info_nce_loss(projections, config.info_nce_temp);
  t.total = (1 - w) * (t.cluster + config.memax_weight * t.memax) + w * t.cls + (1 - w) * t.contrastive + w * t.supcon;
  return t;
}

}  // namespace mcdl
