#include "layers/patch_embed.h"

#include <cmath>

#include "engine/ops.h"

namespace mcdl {

PatchEmbed::PatchEmbed(int64_t in_chans, int64_t dim, int64_t patch_size)
    : weight(new_parameter({dim, in_chans, patch_size, patch_size})),
      bias(new_parameter({dim})),
      patch_size_(patch_size) {}

Tensor PatchEmbed::forward(const Tensor& images) const {
  check(images.dim() == 4 && images.size(1) == weight.size(1), "PatchEmbed: expected images [B, ", weight.size(1),
        ", H, W], got ", images.str());
  check(images.size(2) % patch_size_ == 0 && images.size(3) % patch_size_ == 0, "PatchEmbed: image size ",
        images.size(2), "x", images.size(3), " is not a multiple of the patch size ", patch_size_);
  Tensor grid = conv2d_patch(images, weight, bias);  // [B, D, H/P, W/P]
  const int64_t b = grid.size(0), d = grid.size(1);
  return transpose(reshape(grid, {b, d, -1}), 1, 2);
}

void PatchEmbed::visit_parameters(const std::string& prefix, const ParameterVisitor& visit) {
  // DINO's _init_weights leaves the conv at PyTorch's default: weight and bias both
  // U(−1/√fan_in, 1/√fan_in) with fan_in = C·P·P.
  const double bound = 1.0 / std::sqrt(static_cast<double>(weight.numel() / weight.size(0)));
  visit(prefix + "proj.weight", weight, ParamInit::uniform(bound));
  visit(prefix + "proj.bias", bias, ParamInit::uniform(bound));
}

}  // namespace mcdl
