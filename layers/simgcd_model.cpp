#include "layers/simgcd_model.h"

namespace mcdl {

SimGCDModel::SimGCDModel(const ModelConfig& config)
    : backbone(config.backbone), head(config.backbone.embed_dim, config.head), config_(config) {}

HeadOutput SimGCDModel::forward(const Tensor& images) { return head.forward(backbone.forward(images)); }

void SimGCDModel::set_grad_from_block(int64_t grad_from_block) {
  backbone.set_grad_from_block(grad_from_block);
  head.set_trainable(true);
}

void SimGCDModel::visit_parameters(const std::string& prefix, const ParameterVisitor& visit) {
  backbone.visit_parameters(prefix, visit);
  head.visit_parameters(prefix + "head.", visit);
}

}  // namespace mcdl
