// The k-means baseline (--method kmeans): sklearn-style k-means (K clusters, 10 restarts of at
// most 300 iterations by default) on the backbone's L2-normalised CLS features of the evaluated
// unlabelled images, scored once; test images take the cluster of their nearest centre. It trains
// nothing, so it builds the backbone alone.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "layers/vision_transformer.h"
#include "mcdl/method/base_method.h"
#include "mcdl/method/simgcd.h"  // ScoredImages

namespace mcdl {

class KMeansBaseline : public BaseMethod {
 public:
  explicit KMeansBaseline(const MethodContext& context);
  EpochScore score(int64_t epoch, bool final, MetricsRow& row) override;
  std::vector<std::string> score_columns() const override { return {"all", "old", "new"}; }
  void append_closing_columns(MetricsRow& row) const override { row.push_back({"inertia", inertia_}); }

 private:
  MethodContext context_;
  std::unique_ptr<VisionTransformer> backbone_;
  ScoredImages images_;
  double inertia_ = 0.0;
};

}  // namespace mcdl
