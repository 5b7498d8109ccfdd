// DINO's PatchEmbed: Conv2d(in_chans → dim, kernel = stride = patch, with bias), flattened to
// tokens in row-major patch order (y, then x): [B, C, H, W] → [B, (H/P)·(W/P), D].
#pragma once
#include "layers/module.h"

namespace mcdl {

class PatchEmbed : public Module {
 public:
  PatchEmbed(int64_t in_chans, int64_t dim, int64_t patch_size);

  Tensor forward(const Tensor& images) const;
  void visit_parameters(const std::string& prefix, const ParameterVisitor& visit) override;

  Tensor weight, bias;  // proj.weight [D, C, P, P], proj.bias [D]

 private:
  int64_t patch_size_;
};

}  // namespace mcdl
