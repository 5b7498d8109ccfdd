#include "tools/common/config_arguments.h"

#include <variant>

#include "engine/error.h"

namespace mcdl::tools {
namespace {

bool is_flag_value(const std::string& text) { return text == "true" || text == "false" || text == "1" || text == "0"; }

}  // namespace

bool is_flag_option(const std::vector<ConfigOption>& options, const std::string& name) {
  for (const ConfigOption& option : options)
    if (option.name == name) return std::holds_alternative<bool*>(option.field);
  return false;
}

OptionArgument read_option_argument(const std::vector<ConfigOption>& options, int argc, char** argv, int& i) {
  const std::string arg = argv[i];
  check(arg.rfind("--", 0) == 0 && arg.size() > 2, "unexpected argument '", arg,
        "' (options start with --; see --help)");
  OptionArgument out{arg.substr(2), ""};
  const size_t eq = out.name.find('=');
  if (eq != std::string::npos) {
    out.value = out.name.substr(eq + 1);
    out.name = out.name.substr(0, eq);
    return out;
  }
  if (is_flag_option(options, out.name)) {
    out.value = i + 1 < argc && is_flag_value(argv[i + 1]) ? argv[++i] : "true";
    return out;
  }
  check(i + 1 < argc, "option --", out.name, " needs a value (see --help)");
  out.value = argv[++i];
  return out;
}

}  // namespace mcdl::tools
