#include "mcdl/method/mcdl.h"

#include <algorithm>
#include <cmath>

#include "engine/autograd.h"
#include "engine/ops.h"
#include "engine/profile.h"
#include "mcdl/method/class_cap.h"
#include "mcdl/run/accuracy_report.h"
#include "mcdl/run/run_checkpoint.h"

namespace mcdl {

Mcdl::Mcdl(const McdlSettings& settings, const TrainingData& data, int64_t clusters, Device device, Collective* world,
           const Shards* shards)
    : settings_(settings),
      truth_(data.unlabelled_labels()),
      validation_truth_(data.validation_labels()),
      num_old_(data.num_old_classes()),
      bank_weak_(static_cast<int64_t>(data.unlabelled.size()), clusters, settings.mu, device, world),
      bank_strong_(static_cast<int64_t>(data.unlabelled.size()), clusters, settings.mu, device, world),
      step_(settings),
      shards_(shards) {}

namespace {

// The share of the bank's samples whose window holds μ predictions.
double full_share(const MemoryBank& bank) {
  if (bank.num_samples() == 0) return 0.0;
  const std::vector<int64_t> filled = bank.filled();
  const auto full = std::count(filled.begin(), filled.end(), bank.mu());
  return static_cast<double>(full) / static_cast<double>(bank.num_samples());
}

}  // namespace

double Mcdl::begin_epoch(int64_t epoch) {
  double weight = 0.0;
  if (settings_.start_fill <= 0) {
    weight = mcdl_loss_weight(settings_, epoch);
  } else {
    if (!fill_start_ && epoch >= settings_.start && full_share(bank_weak_) >= settings_.start_fill) fill_start_ = epoch;
    if (fill_start_) {
      McdlSettings from_fill = settings_;
      from_fill.start = *fill_start_;
      weight = mcdl_loss_weight(from_fill, epoch);
    }
  }
  if (settings_.class_cap > 0 && weight > 0)
    step_.set_demoted(class_cap_demotions(bank_weak_, bank_strong_, settings_.mu, settings_.class_cap));
  else
    step_.set_demoted({});
  return weight;
}

McdlTerms Mcdl::step(TrainedMethod& base, const BaseStep& base_step, const LoadedBatch& batch,
                     const BatchLabels& labels, int64_t epoch, bool losses) {
  const ProfileRange range(batch.views[0].device(), "mcdl");
  const Tensor weak_logits = base.weak_logits(base_step);
  const auto logits = [&base](const Tensor& images) { return base.logits(images); };
  // An EMA teacher divides and labels: its predictions fill the banks (mcdl_step.h).
  const Tensor& teacher_weak = base_step.teacher_logits;
  const Tensor teacher_strong = teacher_weak.defined() ? base.teacher_logits(batch.views[2]) : Tensor();
  const McdlBatch step_batch{weak_logits,
                             base_step.projection,
                             batch.views[0],
                             batch.views[2],
                             labels.labels,
                             labels.labelled,
                             labels.bank_index,
                             epoch,
                             batch.batch,
                             teacher_weak.defined() ? &teacher_weak : nullptr,
                             teacher_strong.defined() ? &teacher_strong : nullptr,
                             shards_};
  McdlTerms terms = step_.run(logits, step_batch, bank_weak_, bank_strong_, losses);
  std::vector<int64_t> rows;
  for (size_t i = 0; i < labels.labelled.size(); ++i)
    if (labels.labelled[i]) {
      rows.push_back(static_cast<int64_t>(i));
      view_truth_.push_back(labels.labels[i]);
    }
  if (!rows.empty()) {
    NoGradGuard no_grad;
    const HostIndex index(rows, weak_logits.device());  // rows of the first weak view: [0, B)
    weak_argmax_.push_back(argmax(index_select(weak_logits.detach(), index), 1));
    strong_argmax_.push_back(argmax(index_select(terms.strong_logits, index), 1));
  }
  return terms;
}

void Mcdl::append_view_accuracy(MetricsRow& row) {
  auto accuracy = [this](const std::vector<Tensor>& predictions) {
    if (predictions.empty()) return std::nan("");
    const std::vector<int64_t> values = concat(predictions, 0).to(Device::cpu()).to_vector<int64_t>();
    int64_t correct = 0;
    for (size_t i = 0; i < values.size(); ++i) correct += values[i] == view_truth_[i] ? 1 : 0;
    return static_cast<double>(correct) / static_cast<double>(values.size());
  };
  row.push_back({"labelled_weak_acc", accuracy(weak_argmax_)});
  row.push_back({"labelled_strong_acc", accuracy(strong_argmax_)});
  view_truth_.clear();
  weak_argmax_.clear();
  strong_argmax_.clear();
}

std::string Mcdl::append_buckets(MetricsRow& row, const EpochPredictions& predictions) const {
  const KnownLabels known = known_labels(predictions.truth, predictions.predictions, predictions.is_old);
  const std::vector<int64_t> cluster_to_class =
      known.truth.empty() ? std::vector<int64_t>{} : v2_assignment(known.truth, known.predictions);
  return append_bucket_columns(row, bucket_report(bank_weak_, bank_strong_, settings_.mu, num_old_, truth_, cluster_to_class));
}

std::vector<std::string> Mcdl::validation_columns() {
  return {"val_high",           "val_medium",          "val_high_precision", "val_medium_precision",
          "val_high_conf_precision", "val_medium_conf_precision"};
}

std::string Mcdl::append_validation(MetricsRow& row, const std::vector<int64_t>& cluster_to_class) const {
  const BucketReport report =
      bucket_report(bank_weak_, bank_strong_, settings_.mu, num_old_, validation_truth_, cluster_to_class);
  row.push_back({"val_high", static_cast<double>(report.known_high)});
  row.push_back({"val_medium", static_cast<double>(report.known_medium)});
  row.push_back({"val_high_precision", report.high_accuracy});
  row.push_back({"val_medium_precision", report.medium_accuracy});
  row.push_back({"val_high_conf_precision", report.high_confidence_accuracy});
  row.push_back({"val_medium_conf_precision", report.medium_confidence_accuracy});
  return "  precision H " + percent(report.high_accuracy) + " M " + percent(report.medium_accuracy) +
         " (by confidence H " + percent(report.high_confidence_accuracy) + " M " +
         percent(report.medium_confidence_accuracy) + ")";
}

void Mcdl::save(std::map<std::string, Tensor>& tensors, std::map<std::string, RowBlocks>& row_blocks) const {
  for (const auto& [prefix, bank] : {std::pair{"bank_weak.", &bank_weak_}, std::pair{"bank_strong.", &bank_strong_}})
    for (auto& [name, rows] : bank->state()) row_blocks[prefix + name] = std::move(rows);
  if (fill_start_) tensors["mcdl.fill_start"] = from_vector<int64_t>({*fill_start_}, {1});
}

void Mcdl::load(const std::map<std::string, Tensor>& tensors, const std::map<std::string, StoredTensor>& stored) {
  bank_weak_.load_state(unprefixed("bank_weak.", tensors), unprefixed("bank_weak.", stored));
  bank_strong_.load_state(unprefixed("bank_strong.", tensors), unprefixed("bank_strong.", stored));
  const auto fill_start = tensors.find("mcdl.fill_start");
  fill_start_.reset();
  if (fill_start != tensors.end()) {
    check(fill_start->second.dtype() == DType::i64 && fill_start->second.numel() == 1,
          "checkpoint: mcdl.fill_start must be one i64, got ", fill_start->second.str());
    fill_start_ = fill_start->second.to(Device::cpu()).to_vector<int64_t>()[0];
  }
}

}  // namespace mcdl
