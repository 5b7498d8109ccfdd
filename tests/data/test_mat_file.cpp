// MATLAB level-5 reader: values written by tests/data/mat_writer.h (plain and compressed),
// then damaged files. (Checked by hand against scipy.io.savemat output as well.)
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "data/mat_file.h"
#include "engine/error.h"
#include "tests/data/mat_writer.h"

using namespace mcdl;
using namespace mcdl::test;

namespace {

std::string temp_mat(const std::string& tag) {
  return (std::filesystem::temp_directory_path() / ("mcdl_mat_" + std::to_string(::getpid()) + "_" + tag + ".mat")).string();
}

void save_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

MatValue annotations() {
  std::vector<std::vector<MatValue>> rows;
  for (int i = 0; i < 3; ++i)
    rows.push_back({MatValue::number(10 + i), MatValue::number(1 + 50 * i), MatValue::string("0000" + std::to_string(i + 1) + ".jpg")});
  return MatValue::structs({"bbox_x1", "class", "fname"}, rows);
}

}  // namespace

TEST_CASE("mat file: struct arrays, strings, numbers and cells, plain and compressed") {
  MatWriter writer;
  writer.add("annotations", annotations(), true);
  MatValue matrix;
  matrix.dims = {2, 3};
  matrix.numbers = {1, 2, 3, 4, 5, 6.5};
  writer.add("m", matrix, false);
  MatValue names;
  names.kind = MatValue::Kind::cell;
  names.dims = {1, 2};
  names.elements = {MatValue::string("AM General Hummer"), MatValue::string("")};
  writer.add("class_names", names, true);
  const std::string path = temp_mat("ok");
  writer.save(path);

  const std::vector<MatArray> vars = read_mat_file(path);
  REQUIRE(vars.size() == 3);
  const MatArray& a = vars[0];
  CHECK(a.name == "annotations");
  CHECK(a.kind == MatArray::Kind::structure);
  CHECK(a.dims == std::vector<int64_t>{1, 3});
  CHECK(a.field_names == std::vector<std::string>{"bbox_x1", "class", "fname"});
  CHECK(a.field(2, "fname").text == "00003.jpg");
  CHECK(a.field(1, "class").scalar() == 51);
  CHECK(a.field(0, "bbox_x1").scalar() == 10);
  CHECK(vars[1].dims == std::vector<int64_t>{2, 3});
  CHECK(vars[1].numbers == std::vector<double>{1, 2, 3, 4, 5, 6.5});
  CHECK(vars[2].cell(0).text == "AM General Hummer");
  CHECK(vars[2].cell(1).text.empty());

  CHECK(read_mat_variable(path, "m").numbers.size() == 6);
  CHECK_THROWS_WITH(read_mat_variable(path, "nope"), doctest::Contains("no variable 'nope' (variables: annotations m class_names)"));
  CHECK_THROWS_WITH(a.field(0, "label"), doctest::Contains("no field 'label' (fields: bbox_x1 class fname)"));
  CHECK_THROWS_WITH(a.field(3, "class"), doctest::Contains("element 3 outside [0, 3)"));
  CHECK_THROWS_WITH(vars[2].cell(2), doctest::Contains("cell 2 outside [0, 2)"));
  CHECK_THROWS_WITH(a.field(0, "fname").scalar(), doctest::Contains("expected one number"));
  std::filesystem::remove(path);
}

TEST_CASE("mat file: truncated, corrupt and unsupported files fail with the file and offset") {
  MatWriter writer;
  writer.add("annotations", annotations(), false);
  const std::vector<uint8_t> plain = writer.bytes();
  MatWriter packed_writer;
  packed_writer.add("annotations", annotations(), true);
  const std::vector<uint8_t> packed = packed_writer.bytes();
  const std::string path = temp_mat("bad");

  CHECK_THROWS_WITH(read_mat_file(path + ".missing"), doctest::Contains("cannot open"));

  save_bytes(path, std::vector<uint8_t>(plain.begin(), plain.begin() + 100));
  CHECK_THROWS_WITH(read_mat_file(path), doctest::Contains("shorter than the 128-byte header"));

  save_bytes(path, std::vector<uint8_t>(plain.begin(), plain.end() - 20));
  CHECK_THROWS_WITH(read_mat_file(path), doctest::Contains("runs past the end"));

  save_bytes(path, std::vector<uint8_t>(packed.begin(), packed.end() - 10));
  CHECK_THROWS_WITH(read_mat_file(path), doctest::Contains("byte 128: data element of"));

  std::vector<uint8_t> corrupt = packed;
  corrupt[136 + 10] ^= 0xff;  // inside the zlib stream
  save_bytes(path, corrupt);
  CHECK_THROWS_WITH(read_mat_file(path), doctest::Contains("is corrupt or truncated"));

  std::vector<uint8_t> hdf5 = plain;
  hdf5[124] = 0x00;
  hdf5[125] = 0x02;
  save_bytes(path, hdf5);
  CHECK_THROWS_WITH(read_mat_file(path), doctest::Contains("v7.3 files are HDF5"));

  std::vector<uint8_t> not_mat = plain;
  not_mat[126] = 'X';
  save_bytes(path, not_mat);
  CHECK_THROWS_WITH(read_mat_file(path), doctest::Contains("not a MATLAB level-5 file"));

  std::vector<uint8_t> sparse = plain;
  sparse[128 + 8 + 8] = 5;  // array flags of the variable: class mxSPARSE
  save_bytes(path, sparse);
  CHECK_THROWS_WITH(read_mat_file(path), doctest::Contains("byte 136: array class 5"));

  std::vector<uint8_t> bad_count = plain;
  bad_count[128 + 8 + 16 + 8 + 4] = 7;  // dimensions {1, 7} but three struct elements follow
  save_bytes(path, bad_count);
  CHECK_THROWS_WITH(read_mat_file(path), doctest::Contains("truncated: a data element tag"));
  std::filesystem::remove(path);
}
