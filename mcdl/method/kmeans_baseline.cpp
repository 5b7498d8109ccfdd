#include "mcdl/method/kmeans_baseline.h"

#include "mcdl/evaluation/kmeans.h"
#include "mcdl/run/accuracy_report.h"
#include "mcdl/run/run_start.h"

namespace mcdl {

KMeansBaseline::KMeansBaseline(const MethodContext& context)
    : context_(context), images_(context.config, context.data, context.device) {
  const BackboneSource source = backbone_source(context.config);
  backbone_ = std::make_unique<VisionTransformer>(source.config);
  backbone_->initialize(context.config.seed);
  if (!source.tensors.empty()) backbone_->load_parameters(source.tensors);
  // Frozen as the trained methods freeze it, so that its features are computed exactly as theirs
  // start (the blocks they train run unrounded under --precision bf16).
  backbone_->set_grad_from_block(first_trained_block(context.config, source.config.depth));
  backbone_->to(context.device);
}

EpochScore KMeansBaseline::score(int64_t, bool, MetricsRow& row) {
  KMeansOptions options;
  options.k = context_.clusters;
  options.restarts = context_.config.kmeans_restarts.value();
  options.max_iters = context_.config.kmeans_iters.value();
  options.seed = context_.config.seed;
  options.world = multi_process_world();  // several processes share the restarts
  EpochScore score;
  double& features_seconds = score.phases.features_seconds;
  double& cluster_seconds = score.phases.cluster_seconds;
  const Tensor features = timed(features_seconds, [&] { return images_.set->features(*backbone_, true); });
  const KMeansResult result = timed(cluster_seconds, [&] { return kmeans(features, options); });
  inertia_ = result.inertia;
  score.accuracy = timed(cluster_seconds, [&] {
    return known_accuracy(known_labels(images_.truth, result.assignment, images_.is_old), false);
  });
  row.push_back({"all", score.accuracy->all});
  row.push_back({"old", score.accuracy->old_classes});
  row.push_back({"new", score.accuracy->new_classes});
  score.line = "kmeans (k=" + std::to_string(options.k) + ", " + std::to_string(options.restarts) + " restarts)  " +
               accuracy_summary(*score.accuracy);
  if (images_.test_set) {
    // Inductive: each test image takes the cluster of its nearest centre.
    const Tensor test_features =
        timed(features_seconds, [&] { return images_.test_set->features(*backbone_, true); });
    const std::vector<int64_t> nearest =
        timed(cluster_seconds, [&] { return nearest_centres(test_features, result.centres); });
    ClusterAccuracy test_accuracy;
    score.line +=
        timed(cluster_seconds, [&] { return append_test_accuracy(row, context_.data, nearest, test_accuracy); });
    score.test_accuracy = test_accuracy;
    write_test_predictions(context_.run, context_.data, nearest);
  }
  images_.write_predictions(context_, result.assignment);
  score.predictions = images_.predictions(result.assignment);
  return score;
}

}  // namespace mcdl
