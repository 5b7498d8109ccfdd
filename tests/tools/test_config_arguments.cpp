// The command line of mcdl_train, mcdl_pretrain and mcdl_estimate_k (tools/common/config_arguments.h):
// "--name value", "--name=value", and a true/false option alone meaning true, so that the
// advice "pass --skip-bad-images" works as written.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "mcdl/run/train_config.h"
#include "tools/common/config_arguments.h"

using namespace mcdl;

namespace {

// The options read from `args` (argv[0] is the tool) into a fresh TrainConfig, as mcdl_train does.
TrainConfig parse(std::vector<std::string> args) {
  args.insert(args.begin(), "mcdl_train");
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  TrainConfig config;
  const int argc = static_cast<int>(argv.size());
  for (int i = 1; i < argc; ++i) {
    const auto [name, value] = tools::read_option_argument(config_options(config), argc, argv.data(), i);
    set_config_option(config, name, value);
  }
  return config;
}

}  // namespace

TEST_CASE("config arguments: a true/false option alone is true, before another option or last") {
  TrainConfig c = parse({"--skip-bad-images", "--out", "runs/x"});
  CHECK(c.skip_bad_images);
  CHECK(c.out == "runs/x");
  c = parse({"--epochs", "3", "--skip-bad-images"});
  CHECK(c.skip_bad_images);
  CHECK(c.epochs == 3);
  c = parse({"--progress", "--epochs", "4"});
  CHECK(c.progress);
  CHECK(c.epochs == 4);
}

TEST_CASE("config arguments: a true/false option still takes true, false, 1, 0 and --name=value") {
  CHECK_FALSE(parse({"--progress", "false", "--epochs", "2"}).progress);
  CHECK_FALSE(parse({"--progress", "0"}).progress);
  CHECK(parse({"--skip-bad-images", "true"}).skip_bad_images);
  CHECK(parse({"--skip-bad-images", "1"}).skip_bad_images);
  CHECK_FALSE(parse({"--skip-bad-images=false"}).skip_bad_images);
  CHECK(parse({"--skip-bad-images=true"}).skip_bad_images);
  CHECK_THROWS_WITH(parse({"--skip-bad-images=maybe"}), doctest::Contains("expected true or false, got 'maybe'"));
  // A word that is not a truth value is not taken: it is an argument of its own, and an error.
  CHECK_THROWS_WITH(parse({"--skip-bad-images", "yes"}), doctest::Contains("unexpected argument 'yes'"));
}

TEST_CASE("config arguments: other options need their value, and say so") {
  CHECK(parse({"--lr=0.5"}).lr == 0.5);
  CHECK(parse({"--out", "--odd-name"}).out == "--odd-name");  // a value is taken as it is
  CHECK_THROWS_WITH(parse({"--epochs"}), doctest::Contains("option --epochs needs a value"));
  CHECK_THROWS_WITH(parse({"epochs", "3"}), doctest::Contains("unexpected argument 'epochs'"));
  CHECK_THROWS_WITH(parse({"--"}), doctest::Contains("unexpected argument '--'"));
  CHECK_THROWS_WITH(parse({"--epochz", "3"}), doctest::Contains("unknown option --epochz"));
  TrainConfig config;
  CHECK(tools::is_flag_option(config_options(config), "skip-bad-images"));
  CHECK(tools::is_flag_option(config_options(config), "progress"));
  CHECK_FALSE(tools::is_flag_option(config_options(config), "epochs"));
  CHECK_FALSE(tools::is_flag_option(config_options(config), "resume"));
}
