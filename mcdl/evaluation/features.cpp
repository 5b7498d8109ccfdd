#include "mcdl/evaluation/features.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <future>

#include "data/decode.h"
#include "data/resize.h"
#include "data/transforms.h"
#include "engine/autograd.h"
#include "engine/error.h"
#include "engine/ops.h"
#include "io/safetensors.h"
#include "layers/backbone_file.h"

namespace mcdl {

namespace fs = std::filesystem;

namespace {

bool has_image_extension(const fs::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  const auto& known = image_file_extensions();
  return std::find(known.begin(), known.end(), ext) != known.end();
}

// One batch of the test transform, [B, C, S, S] on the CPU.
Tensor prepare_batch(const std::vector<std::string>& paths, size_t begin, size_t end, int64_t channels,
                     int64_t image_size) {
  const int64_t per_image = channels * image_size * image_size;
  Tensor batch = empty({static_cast<int64_t>(end - begin), channels, image_size, image_size});
  float* out = batch.data<float>();
  for (size_t i = begin; i < end; ++i) {
    const std::vector<float> pixels = test_transform_file(paths[i], channels, image_size);
    std::copy(pixels.begin(), pixels.end(), out + static_cast<int64_t>(i - begin) * per_image);
  }
  return batch;
}

}  // namespace

const std::vector<std::string>& image_file_extensions() {
  // What data/decode.h reads (stb_image).
  static const std::vector<std::string> extensions = {".jpg", ".jpeg", ".png", ".bmp", ".gif",
                                                      ".tga", ".psd", ".pnm", ".ppm", ".pgm"};
  return extensions;
}

std::vector<std::string> list_image_files(const std::vector<std::string>& inputs) {
  std::vector<std::string> files;
  for (const std::string& input : inputs) {
    std::error_code error;
    const fs::file_status status = fs::status(input, error);
    check(fs::exists(status), input, ": no such file or directory");
    if (!fs::is_directory(status)) {
      files.push_back(input);
      continue;
    }
    std::vector<std::string> found;
    for (fs::recursive_directory_iterator it(input), end; it != end; ++it)
      if (it->is_regular_file() && has_image_extension(it->path())) found.push_back(it->path().string());
    check(!found.empty(), input, ": no image files in the directory (looked for ", image_file_extensions().size(),
          " extensions: .jpg, .png, .bmp, ...)");
    std::sort(found.begin(), found.end());
    files.insert(files.end(), found.begin(), found.end());
  }
  return files;
}

std::vector<float> test_transform_file(const std::string& path, int64_t channels, int64_t image_size) {
  const Image image = decode_image(path, channels);
  const Image resized = resize_shorter_side(image, TransformSizes{image_size}.resize_size());
  const Image view = center_crop(resized, image_size, image_size);
  std::vector<float> out(static_cast<size_t>(channels * image_size * image_size));
  to_tensor_normalize(view, Normalization::for_channels(channels), out.data());
  return out;
}

Tensor extract_features(VisionTransformer& backbone, const std::vector<std::string>& paths,
                        const FeatureOptions& options) {
  const VitConfig& config = backbone.config();
  const int64_t s = options.image_size;
  check(!paths.empty(), "extract_features: no images");
  check(options.batch_size >= 1, "extract_features: batch size must be >= 1, got ", options.batch_size);
  check(s >= config.patch_size && s % config.patch_size == 0, "extract_features: image size ", s,
        " is not a positive multiple of the backbone's patch size ", config.patch_size);
  const Device device = backbone.cls_token.device();
  const size_t count = paths.size(), step = static_cast<size_t>(options.batch_size);
  auto prepare = [&](size_t begin) {
    return std::async(std::launch::async, prepare_batch, std::cref(paths), begin, std::min(count, begin + step),
                      config.in_chans, s);
  };

  NoGradGuard no_grad;
  std::vector<Tensor> parts;
  std::future<Tensor> next = prepare(0);
  for (size_t begin = 0; begin < count; begin += step) {
    const Tensor images = next.get();
    if (begin + step < count) next = prepare(begin + step);
    const Tensor cls = backbone.forward(images.to(device));
    parts.push_back((options.normalise ? l2_normalize(cls) : cls).to(Device::cpu()));
    if (options.on_batch) options.on_batch(static_cast<int64_t>(std::min(count, begin + step)));
  }
  return parts.size() == 1 ? parts[0] : concat(parts, 0);
}

VisionTransformer load_backbone_weights(const std::string& path, const std::string& config_spec) {
  if (config_spec.empty()) {
    BackboneFile file = load_backbone_file(path);
    VisionTransformer backbone(file.config.backbone);
    backbone.load_parameters(file.tensors);
    return backbone;
  }
  const ModelConfig config = parse_model_config(config_spec);
  const SafetensorsFile file = read_weights_safetensors(path);
  VisionTransformer backbone(config.backbone);
  try {
    backbone.load_parameters(file.tensors);
  } catch (const Error& e) {
    fail("weights file ", path, " does not fit --config ", config_spec, ": ", e.what());
  }
  return backbone;
}

}  // namespace mcdl
