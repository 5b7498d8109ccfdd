// The command line of the tools whose settings are a ConfigOption table (mcdl/run/options.h):
// mcdl_train, mcdl_pretrain and mcdl_estimate_k. An option is "--name value" or "--name=value";
// a true/false option may also stand alone, "--skip-bad-images" meaning true (as the error
// messages advise it), while "--skip-bad-images false" and "--progress true" still work.
#pragma once
#include <string>
#include <vector>

#include "mcdl/run/options.h"

namespace mcdl::tools {

struct OptionArgument {
  std::string name;   // without the leading "--"
  std::string value;  // "true" for a true/false option given alone
};

// Whether `name` is a true/false option of the table.
bool is_flag_option(const std::vector<ConfigOption>& options, const std::string& name);

// The option at argv[i] (which starts with "--") and its value: after '=', else the next
// argument, which a true/false option takes only when it is true, false, 1 or 0. Leaves i on
// the last argument read. An option that needs a value and has none is an error naming it. Names
// that the table does not know (a tool's own options, such as --resume) take a value.
OptionArgument read_option_argument(const std::vector<ConfigOption>& options, int argc, char** argv, int& i);

}  // namespace mcdl::tools
