// mcdl_augment: runs the data pipeline's transforms on one image file and writes the result as
// a PNG, to look at what training sees: one RandAugment op with fixed parameters, or a whole
// pipeline (train / test / strong), optionally as a grid of independent random draws.
#include <cmath>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "data/decode.h"
#include "data/randaugment.h"
#include "data/resize.h"
#include "data/transforms.h"
#include "engine/error.h"

namespace {

constexpr const char* kUsage =
    "usage: mcdl_augment IMAGE -o OUT.png [--op NAME [--magnitude M] [--sign +|-]]\n"
    "                    [--pipeline train|test|strong] [--size S] [--grid N] [--seed SEED] [--gray]\n"
    "\n"
    "Applies the engine's transforms (bit-exact with torchvision 0.14 / Pillow 9.4) to IMAGE.\n"
    "\n"
    "  -o, --output OUT.png  the PNG to write\n"
    "  --op NAME             one torchvision RandAugment op on the decoded image: Identity, ShearX,\n"
    "                        ShearY, TranslateX, TranslateY, Rotate, Brightness, Color, Contrast,\n"
    "                        Sharpness, Posterize, Solarize, AutoContrast, Equalize\n"
    "  --magnitude M         its magnitude bin, 0..30, of RandAugment's 31-bin tables (default 9)\n"
    "  --sign +|-            the sign of a signed op (default +)\n"
    "  --pipeline P          train:  resize the shorter side to int(S/0.875), bicubic; random crop S; flip 1/2\n"
    "                        test:   the same resize, then a centre crop S\n"
    "                        strong: train, then RandAugment(num_ops=2, magnitude=9)\n"
    "  --size S              the crop size S (default 224; 28 for Fashion-MNIST)\n"
    "  --grid N              write N independent draws of the pipeline side by side (a grid with\n"
    "                        ceil(sqrt(N)) columns, 2-pixel black gaps)\n"
    "  --seed SEED           random seed (default 0); draw i uses stream ('mcdl_augment', i)\n"
    "  --gray                decode as one grey channel (PIL convert('L'))\n"
    "  -h, --help            this text\n"
    "\n"
    "Exit status: 0 done, 1 error, 2 bad usage.\n";

int usage_error(const std::string& message) {
  std::cerr << "mcdl_augment: " << message << "\n" << "run 'mcdl_augment --help' for usage\n";
  return 2;
}

std::optional<int64_t> parse_int(const std::string& text) {
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0') return std::nullopt;
  return v;
}

struct Options {
  std::string input, output, op_name, pipeline;
  int64_t magnitude = 9, size = 224, grid = 0, seed = 0;
  bool negative = false, gray = false;
};

mcdl::Image run_pipeline(const mcdl::Image& resized, const Options& o, int64_t draw) {
  if (o.pipeline == "test") return mcdl::center_crop(resized, o.size, o.size);
  mcdl::RandomStream stream(static_cast<uint64_t>(o.seed), mcdl::stream_id("mcdl_augment", {draw}));
  const mcdl::CropFlip crop = mcdl::draw_random_crop_flip(stream, resized.height, resized.width, o.size);
  mcdl::Image out = mcdl::apply_crop_flip(resized, crop, o.size);
  if (o.pipeline == "strong") out = mcdl::apply_randaugment(out, mcdl::draw_randaugment(stream, o.size, o.size));
  return out;
}

// Tiles equally sized images, ceil(sqrt(n)) per row, with 2-pixel black gaps.
mcdl::Image tile(const std::vector<mcdl::Image>& images) {
  const auto n = static_cast<int64_t>(images.size());
  const auto columns = static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(n))));
  const int64_t rows = (n + columns - 1) / columns, gap = 2;
  const mcdl::Image& first = images.front();
  mcdl::Image grid(rows * first.height + (rows - 1) * gap, columns * first.width + (columns - 1) * gap,
                   first.channels);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t y0 = i / columns * (first.height + gap), x0 = i % columns * (first.width + gap);
    for (int64_t y = 0; y < first.height; ++y)
      for (int64_t x = 0; x < first.width; ++x)
        for (int64_t c = 0; c < first.channels; ++c)
          grid.at(y0 + y, x0 + x, c) = images[static_cast<size_t>(i)].at(y, x, c);
  }
  return grid;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::cout << kUsage;
      return 0;
    }
    if (arg == "--gray") {
      o.gray = true;
      continue;
    }
    const bool takes_value = arg == "-o" || arg == "--output" || arg == "--op" || arg == "--magnitude" ||
                             arg == "--sign" || arg == "--pipeline" || arg == "--size" || arg == "--grid" ||
                             arg == "--seed";
    if (takes_value) {
      if (i + 1 >= argc) return usage_error(arg + " needs a value");
      const std::string value = argv[++i];
      if (arg == "-o" || arg == "--output") {
        o.output = value;
      } else if (arg == "--op") {
        o.op_name = value;
      } else if (arg == "--pipeline") {
        o.pipeline = value;
      } else if (arg == "--sign") {
        if (value != "+" && value != "-") return usage_error("--sign must be + or -, got '" + value + "'");
        o.negative = value == "-";
      } else {
        const auto number = parse_int(value);
        if (!number) return usage_error(arg + " needs an integer, got '" + value + "'");
        (arg == "--magnitude" ? o.magnitude : arg == "--size" ? o.size : arg == "--grid" ? o.grid : o.seed) = *number;
      }
    } else if (!arg.empty() && arg[0] == '-') {
      return usage_error("unknown option '" + arg + "'");
    } else if (o.input.empty()) {
      o.input = arg;
    } else {
      return usage_error("more than one input ('" + o.input + "' and '" + arg + "')");
    }
  }
  if (o.input.empty()) return usage_error("no input image");
  if (o.output.empty()) return usage_error("no output file (-o OUT.png)");
  if (o.op_name.empty() == o.pipeline.empty()) return usage_error("give exactly one of --op NAME and --pipeline P");
  if (!o.pipeline.empty() && o.pipeline != "train" && o.pipeline != "test" && o.pipeline != "strong")
    return usage_error("--pipeline must be train, test or strong, got '" + o.pipeline + "'");
  std::optional<mcdl::AugmentOp> op;
  if (!o.op_name.empty()) {
    op = mcdl::augment_op_from_name(o.op_name);
    if (!op) return usage_error("unknown --op '" + o.op_name + "' (see --help for the 14 names)");
    if (o.grid > 0) return usage_error("--grid needs --pipeline (an --op has no randomness)");
  }
  if (o.magnitude < 0 || o.magnitude > 30) return usage_error("--magnitude must be a bin in 0..30");
  if (o.size <= 0) return usage_error("--size must be positive");
  if (o.grid < 0 || o.grid > 400) return usage_error("--grid must be in 0..400");

  try {
    const mcdl::Image image = mcdl::decode_image(o.input, o.gray ? 1 : 3);
    mcdl::Image out;
    if (op) {
      double magnitude = mcdl::augment_magnitude(*op, static_cast<int>(o.magnitude), 31, image.height, image.width);
      if (o.negative && mcdl::augment_op_signed(*op)) magnitude = -magnitude;
      out = mcdl::apply_augment(image, {*op, magnitude});
      std::cout << "mcdl_augment: " << mcdl::augment_op_name(*op) << " magnitude " << magnitude << "\n";
    } else {
      const mcdl::TransformSizes sizes{o.size};
      const mcdl::Image resized = mcdl::resize_shorter_side(image, sizes.resize_size());
      std::vector<mcdl::Image> draws;
      for (int64_t i = 0; i < std::max<int64_t>(o.grid, 1); ++i) draws.push_back(run_pipeline(resized, o, i));
      out = o.grid > 0 ? tile(draws) : draws.front();
    }
    mcdl::write_png(o.output, out);
    std::cout << "mcdl_augment: wrote " << o.output << " (" << out.width << "x" << out.height << ", "
              << out.channels << (out.channels == 1 ? " channel)\n" : " channels)\n");
  } catch (const std::exception& e) {
    std::cerr << "mcdl_augment: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
