// The libFuzzer targets' bodies, one function per parser: the fuzz_<name>.cpp files hand the
// fuzzer's bytes to them, and tests/test_fuzz_regressions.cpp replays the seed corpus and every
// regression input through the same functions in the normal (g++) test suite.
//
// mcdl::Error is the parsers' clean rejection and is caught; anything else (another exception
// type, a crash, a sanitizer report, a timeout, running out of memory) is a finding.
#pragma once
#include <algorithm>

#include "data/datasets/readers.h"
#include "data/decode.h"
#include "data/mat_file.h"
#include "io/npy.h"
#include "io/numpy_pickle.h"
#include "io/pickle.h"
#include "io/safetensors.h"
#include "io/torch_checkpoint.h"
#include "io/zip_archive.h"
#include "tools/common/csv_table.h"
#include "tests/fuzz/fuzz_common.h"

namespace mcdl::fuzz {

// The CIFAR readers (data/datasets/cifar): the binary batches (label bytes + 3072 pixel bytes per
// record) and the python batches (the unpickler + numpy arrays + labels). The first input byte
// picks the layout (bit 0: python, else binary) and the dataset (bit 1: CIFAR-100, else
// CIFAR-10, whose five batches all get the same bytes); the rest is the batch file.
inline int cifar(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool python = (data[0] & 1) != 0;
  const int64_t classes = (data[0] & 2) != 0 ? 100 : 10;
  const std::span<const uint8_t> batch(data + 1, size - 1);
  const std::string dir = "cifar" + std::to_string(classes) + (python ? "_py" : "_bin");
  make_scratch_dir(dir);
  if (classes == 100) {
    write_scratch(dir + (python ? "/train" : "/train.bin"), batch);
  } else {
    for (int i = 1; i <= 5; ++i)
      write_scratch(dir + "/data_batch_" + std::to_string(i) + (python ? "" : ".bin"), batch);
  }
  return guarded(
      [&] { (void)mcdl::dataset_io::read_cifar(scratch_dir() + "/" + dir, classes, false); });
}

// The CSV reader of the command-line tools (tools/common/csv_table, mcdl_eval's predictions):
// quoting, the header checks, row widths, and the integer fields. It reads from a path, so the
// input goes through a scratch file.
inline int csv(const uint8_t* data, size_t size) {
  const std::string path = write_scratch("input.csv", {data, size});
  return guarded([&] {
    const mcdl::tools::CsvTable table = mcdl::tools::read_csv(path);
    for (size_t c = 0; c < table.header.size(); ++c) {
      (void)table.require_column(table.header[c]);
      for (size_t r = 0; r < table.rows.size(); ++r) {
        try {
          (void)table.integer(static_cast<int64_t>(r), static_cast<int64_t>(c), 0);
        } catch (const mcdl::Error&) {
        }
      }
    }
    (void)table.column("label");
  });
}

// Image decoding behind the project's wrapper (data/decode: stb_image for JPEG, PNG, BMP, GIF,
// TGA, PSD, PNM, ...), its checks (pixel limit, PNM header) and the conversion to RGB or L.
// The first input byte picks the channels (bit 0: 1, else 3); the rest is the image file.
inline int decode(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int64_t channels = (data[0] & 1) != 0 ? 1 : 3;
  return guarded([&] { (void)mcdl::decode_image_bytes({data + 1, size - 1}, "fuzz input", channels); });
}

// The Fashion-MNIST reader (data/datasets/fashion_mnist): idx headers and sizes, labels, and the
// gzip reader behind it (read_maybe_gzipped). Input: a flag byte (bit 0: the images file is
// .gz, bit 1: the labels file is), a little-endian u16 length L, then L bytes of the labels file
// (fewer when the input ends first) and the rest as the images file.
inline int fashion_mnist(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  const bool images_gz = (data[0] & 1) != 0, labels_gz = (data[0] & 2) != 0;
  const size_t label_size = std::min<size_t>(data[1] | (size_t{data[2]} << 8), size - 3);
  const std::span<const uint8_t> labels(data + 3, label_size);
  const std::span<const uint8_t> images(data + 3 + label_size, size - 3 - label_size);
  const std::string dir = "fmnist" + std::to_string(data[0] & 3);
  make_scratch_dir(dir);
  write_scratch(dir + "/train-labels-idx1-ubyte" + (labels_gz ? ".gz" : ""), labels);
  write_scratch(dir + "/train-images-idx3-ubyte" + (images_gz ? ".gz" : ""), images);
  return guarded(
      [&] { (void)mcdl::dataset_io::read_fashion_mnist(scratch_dir() + "/" + dir, false); });
}

// The MATLAB level-5 reader (data/mat_file): the header, data element tags (small and normal),
// miCOMPRESSED variables (zlib), numeric, char, cell and struct arrays, and the accessors.
// It reads from a path, so the input goes through a scratch file.
inline int mat(const uint8_t* data, size_t size) {
  const std::string path = write_scratch("input.mat", {data, size});
  return guarded([&] {
    for (const mcdl::MatArray& variable : mcdl::read_mat_file(path)) {
      try {
        (void)variable.numel();
        if (variable.kind == mcdl::MatArray::Kind::cell) (void)variable.cell(0);
        if (variable.kind == mcdl::MatArray::Kind::structure && !variable.field_names.empty())
          (void)variable.field(0, variable.field_names[0]);
        (void)variable.scalar();
      } catch (const mcdl::Error&) {
      }
    }
  });
}

// The .npy reader (io/npy, versions 1.0 and 2.0): magic, header length, the header dict parser
// and the data size check. It reads from a path, so the input goes through a scratch file.
inline int npy(const uint8_t* data, size_t size) {
  const std::string path = write_scratch("input.npy", {data, size});
  return guarded([&] { (void)mcdl::read_npy(path); });
}

inline void try_array(const mcdl::PickleValue& value) {
  if (!value.is(mcdl::PickleValue::Kind::object)) return;
  try {
    (void)mcdl::numpy_array_from_pickle(value);
  } catch (const mcdl::Error&) {
  }
}

// The allowlisting unpickler (io/pickle) with the numpy globals, then numpy arrays out of what it
// returns (io/numpy_pickle): the top-level value, and every value of a top-level dict (as CIFAR's
// python batches hold their b'data').
inline int pickle(const uint8_t* data, size_t size) {
  static const mcdl::PickleOptions options = [] {
    mcdl::PickleOptions o;
    o.globals = mcdl::numpy_array_globals();
    o.globals.emplace("collections.OrderedDict", mcdl::pickle_call_make_dict);
    o.persistent_load = [](const mcdl::PickleValue& id) { return mcdl::PickleValue::handle(id.items().size()); };
    o.what = "fuzz input";
    return o;
  }();
  return guarded([&] {
    const mcdl::PickleValue root = mcdl::unpickle(std::span<const uint8_t>(data, size), options);
    (void)root.describe();
    try_array(root);
    if (root.is(mcdl::PickleValue::Kind::dict)) {
      for (const auto& [key, value] : root.entries()) try_array(value);
    }
  });
}

// The safetensors reader (io/safetensors): header length, the JSON header (duplicates, nesting,
// dtypes, shapes, offsets), the layout check and the tensor reads; then the same file with its
// tensors left in it, each read back in two blocks of rows (what --resume does with the banks).
// It reads from a path, so the input goes through a scratch file.
inline int safetensors(const uint8_t* data, size_t size) {
  const std::string path = write_scratch("input.safetensors", {data, size});
  return guarded([&] {
    (void)mcdl::load_safetensors(path);
    const SafetensorsFile file = mcdl::load_safetensors(path, [](const std::string&) { return true; });
    for (const auto& [name, stored] : file.stored) {
      const int64_t rows = stored.shape()[0], half = rows / 2;
      (void)stored.rows(0, half);
      (void)stored.rows(half, rows);
    }
  });
}

// The PyTorch checkpoint reader (io/torch_checkpoint) from bytes: the zip format (zip reader +
// data.pkl + storages) and the legacy stream format (consecutive pickles + raw storages), the
// state-dict search and every tensor's strided gather (io/raw_tensor).
inline int torch_checkpoint(const uint8_t* data, size_t size) {
  return guarded([&] {
    const std::span<const uint8_t> bytes(data, size);
    (void)mcdl::looks_like_torch_checkpoint(bytes);
    (void)mcdl::read_torch_checkpoint(bytes, "fuzz input");
  });
}

// The zip reader (io/zip_archive): central directory, Zip64 records and extra fields, local
// headers, and every entry's data (stored entries, CRC-32 checked).
inline int zip(const uint8_t* data, size_t size) {
  return guarded([&] {
    const mcdl::ZipArchive zip(std::span<const uint8_t>(data, size), "fuzz input");
    for (const mcdl::ZipEntry& entry : zip.entries()) {
      try {
        (void)zip.data(entry);
      } catch (const mcdl::Error&) {
      }
      (void)zip.find(entry.name);
    }
  });
}

}  // namespace mcdl::fuzz
