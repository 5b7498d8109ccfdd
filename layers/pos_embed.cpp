#include "layers/pos_embed.h"

#include <algorithm>
#include <cmath>

#include "engine/autograd.h"
#include "engine/ops.h"
#include "engine/settings.h"

namespace mcdl {
namespace {

// ATen's cubic convolution coefficients (UpSample.h get_cubic_upsample_coefficients).
constexpr double cubic_a = -0.75;
double cubic_near(double x) { return ((cubic_a + 2) * x - (cubic_a + 3)) * x * x + 1; }                   // |x| ≤ 1
double cubic_far(double x) { return ((cubic_a * x - 5 * cubic_a) * x + 8 * cubic_a) * x - 4 * cubic_a; }  // 1 < |x| < 2

// For each output position: the four clamped source indices and their weights.
struct Taps {
  std::vector<int64_t> index;  // 4 per output position
  std::vector<double> weight;
};

// float_step: the step 1/scale rounded to float, as PyTorch's float32 kernel holds it (its
// "opmath" type); at DINOv2's 37x37 grid this moves the source coordinates by up to ~1e-6.
Taps cubic_taps(int64_t in_size, int64_t out_size, double scale_factor, bool float_step) {
  Taps taps{std::vector<int64_t>(4 * out_size), std::vector<double>(4 * out_size)};
  double step = 1.0 / scale_factor;  // area_pixel_compute_scale with a given scale factor
  if (float_step) step = static_cast<float>(step);
  for (int64_t o = 0; o < out_size; ++o) {
    const double source = step * (static_cast<double>(o) + 0.5) - 0.5;  // cubic: not clamped at 0
    const double floor_source = std::floor(source);
    const double t = source - floor_source;
    const int64_t base = static_cast<int64_t>(floor_source);
    const double w[4] = {cubic_far(t + 1), cubic_near(t), cubic_near(1 - t), cubic_far(2 - t)};
    for (int64_t k = 0; k < 4; ++k) {
      taps.index[4 * o + k] = std::clamp<int64_t>(base - 1 + k, 0, in_size - 1);
      taps.weight[4 * o + k] = w[k];
    }
  }
  return taps;
}

// DINO's test for using the table as it is: as many patches as stored, and a square image.
bool table_fits(const Tensor& pos_embed, int64_t image_h, int64_t image_w, int64_t patch) {
  return (image_h / patch) * (image_w / patch) == pos_embed.size(1) - 1 && image_h == image_w;
}

// The graph path: the patch rows of pos_embed times the 2-D weight matrix (see the header).
Tensor resize_in_graph(const Tensor& pos_embed, int64_t g, double scale_h, double scale_w, int64_t out_h, int64_t out_w,
                       bool float_step) {
  const std::vector<double> rows = bicubic_matrix(g, out_h, scale_h, float_step),
                            cols = bicubic_matrix(g, out_w, scale_w, float_step);
  std::vector<double> weights(static_cast<size_t>(out_h * out_w * g * g));
  for (int64_t oy = 0; oy < out_h; ++oy)
    for (int64_t ox = 0; ox < out_w; ++ox)
      for (int64_t iy = 0; iy < g; ++iy)
        for (int64_t ix = 0; ix < g; ++ix)
          weights[static_cast<size_t>(((oy * out_w + ox) * g + iy) * g + ix)] =
              rows[static_cast<size_t>(oy * g + iy)] * cols[static_cast<size_t>(ox * g + ix)];
  const int64_t d = pos_embed.size(2);
  const Tensor matrix = from_vector(weights, {out_h * out_w, g * g}).to(pos_embed.dtype()).to(pos_embed.device());
  const ScopedEngineSettings fp32(&EngineSettings::matmul_precision, MatmulPrecision::fp32);
  Tensor patches = matmul(matrix, reshape(slice(pos_embed, 1, 1, 1 + g * g), {g * g, d}));
  return concat({slice(pos_embed, 1, 0, 1), reshape(patches, {1, out_h * out_w, d})}, 1);
}

}  // namespace

std::vector<double> bicubic_matrix(int64_t in_size, int64_t out_size, double scale_factor, bool float_step) {
  check(in_size > 0 && out_size > 0 && scale_factor > 0, "bicubic_matrix: bad sizes ", in_size, " -> ", out_size,
        " or scale ", scale_factor);
  const Taps taps = cubic_taps(in_size, out_size, scale_factor, float_step);
  std::vector<double> matrix(static_cast<size_t>(out_size * in_size), 0.0);
  for (int64_t o = 0; o < out_size; ++o)
    for (int64_t k = 0; k < 4; ++k)
      matrix[static_cast<size_t>(o * in_size + taps.index[4 * o + k])] += taps.weight[4 * o + k];
  return matrix;
}

std::vector<double> bicubic_resize(const std::vector<double>& planes, int64_t channels, int64_t in_h, int64_t in_w,
                                   double scale_h, double scale_w, int64_t& out_h, int64_t& out_w, bool float_step) {
  check(in_h > 0 && in_w > 0 && scale_h > 0 && scale_w > 0, "bicubic_resize: bad input ", in_h, "x", in_w, " or scale ",
        scale_h, "x", scale_w);
  check(static_cast<int64_t>(planes.size()) == channels * in_h * in_w, "bicubic_resize: ", planes.size(),
        " values do not fill ", channels, " planes of ", in_h, "x", in_w);
  // ATen compute_output_size: floor(input size · scale factor), in double.
  out_h = static_cast<int64_t>(std::floor(static_cast<double>(in_h) * scale_h));
  out_w = static_cast<int64_t>(std::floor(static_cast<double>(in_w) * scale_w));
  check(out_h > 0 && out_w > 0, "bicubic_resize: scale ", scale_h, "x", scale_w, " gives an empty output from ", in_h,
        "x", in_w);
  const Taps rows = cubic_taps(in_h, out_h, scale_h, float_step), cols = cubic_taps(in_w, out_w, scale_w, float_step);
  std::vector<double> out(static_cast<size_t>(channels * out_h * out_w));
  for (int64_t c = 0; c < channels; ++c) {
    const double* plane = planes.data() + c * in_h * in_w;
    for (int64_t oy = 0; oy < out_h; ++oy)
      for (int64_t ox = 0; ox < out_w; ++ox) {
        double value = 0;
        for (int64_t i = 0; i < 4; ++i) {
          const double* row = plane + rows.index[4 * oy + i] * in_w;
          double row_value = 0;
          for (int64_t j = 0; j < 4; ++j) row_value += cols.weight[4 * ox + j] * row[cols.index[4 * ox + j]];
          value += rows.weight[4 * oy + i] * row_value;
        }
        out[static_cast<size_t>((c * out_h + oy) * out_w + ox)] = value;
      }
  }
  return out;
}

Tensor interpolate_pos_encoding(const Tensor& pos_embed, int64_t image_h, int64_t image_w, int64_t patch) {
  check(pos_embed.dim() == 3 && pos_embed.size(0) == 1 && pos_embed.size(1) >= 2,
        "interpolate_pos_encoding: expected pos_embed [1, 1 + N, D], got ", pos_embed.str());
  const int64_t n = pos_embed.size(1) - 1, d = pos_embed.size(2);
  const int64_t grid_h = image_h / patch, grid_w = image_w / patch;
  if (table_fits(pos_embed, image_h, image_w, patch)) return pos_embed;

  const auto g = static_cast<int64_t>(std::sqrt(static_cast<double>(n)));
  check(g * g == n, "interpolate_pos_encoding: pos_embed ", pos_embed.str(), " does not hold a square grid of patches");
  // DINO: w0 = w // patch + 0.1 with "w" the image height (dim 2), scale = w0 / sqrt(N).
  const double scale_h = (static_cast<double>(grid_h) + 0.1) / std::sqrt(static_cast<double>(n));
  const double scale_w = (static_cast<double>(grid_w) + 0.1) / std::sqrt(static_cast<double>(n));
  // ATen compute_output_size, as in bicubic_resize; DINO asserts it gives the patch grid.
  const auto out_h = static_cast<int64_t>(std::floor(static_cast<double>(g) * scale_h));
  const auto out_w = static_cast<int64_t>(std::floor(static_cast<double>(g) * scale_w));
  check(out_h == grid_h && out_w == grid_w, "interpolate_pos_encoding: resized grid ", out_h, "x", out_w,
        " does not match the ", grid_h, "x", grid_w, " patches of the input");
  // PyTorch holds the step of a float32 (or narrower) table in float32.
  const bool float_step = pos_embed.dtype() != DType::f64;
  if (pos_embed.requires_grad() && grad_enabled())
    return resize_in_graph(pos_embed, g, scale_h, scale_w, out_h, out_w, float_step);

  const std::vector<double> table = pos_embed.to_vector<double>();  // [1 + g², D]
  std::vector<double> planes(static_cast<size_t>(d * n));           // [D, g, g] (NCHW)
  for (int64_t p = 0; p < n; ++p)
    for (int64_t c = 0; c < d; ++c)
      planes[static_cast<size_t>(c * n + p)] = table[static_cast<size_t>((1 + p) * d + c)];
  int64_t resized_h = 0, resized_w = 0;
  const std::vector<double> resized =
      bicubic_resize(planes, d, g, g, scale_h, scale_w, resized_h, resized_w, float_step);

  const int64_t m = out_h * out_w;
  std::vector<double> result(static_cast<size_t>((1 + m) * d));
  std::copy(table.begin(), table.begin() + d, result.begin());  // the class embedding
  for (int64_t p = 0; p < m; ++p)
    for (int64_t c = 0; c < d; ++c)
      result[static_cast<size_t>((1 + p) * d + c)] = resized[static_cast<size_t>(c * m + p)];
  return from_vector(result, {1, 1 + m, d}).to(pos_embed.dtype()).to(pos_embed.device());
}

Tensor PosEmbedResizer::operator()(const Tensor& pos_embed, int64_t image_h, int64_t image_w, int64_t patch) {
  // Nothing to keep: the table as it is, a table in the graph, or a malformed one (the error).
  if (pos_embed.dim() != 3 || table_fits(pos_embed, image_h, image_w, patch) ||
      (pos_embed.requires_grad() && grad_enabled()))
    return interpolate_pos_encoding(pos_embed, image_h, image_w, patch);
  const std::shared_ptr<Storage>& storage = pos_embed.storage();
  const bool same = resized_.defined() && storage_.lock() == storage && offset_ == pos_embed.storage_offset() &&
                    shape_ == pos_embed.shape() && writes_ == storage->writes() && image_h_ == image_h &&
                    image_w_ == image_w && patch_ == patch;
  if (!same) {
    resized_ = interpolate_pos_encoding(pos_embed, image_h, image_w, patch);
    storage_ = storage;
    offset_ = pos_embed.storage_offset();
    shape_ = pos_embed.shape();
    writes_ = storage->writes();
    image_h_ = image_h;
    image_w_ = image_w;
    patch_ = patch;
  }
  return resized_;
}

}  // namespace mcdl
