// A table of named settings (command-line flag = JSON key) over a config struct's fields, so
// that parsing, saving, loading and help text come from one list. Used by the training and
// pretraining configs.
#pragma once
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace mcdl {

struct ConfigOption {
  std::string name;  // the command-line flag without "--", and the JSON key
  std::string help;
  std::variant<std::string*, int64_t*, uint64_t*, double*, bool*> field;
};

// Sets the option `name` from its text (flags: true/false/1/0); the error names the option and
// what it expects, or says the option is unknown.
void set_option(const std::vector<ConfigOption>& options, const std::string& name, const std::string& value);
// {"name": value, ...} in the table's order, plus the `extra` string entries first.
std::string options_to_json(const std::vector<ConfigOption>& options,
                            const std::vector<std::pair<std::string, std::string>>& extra = {});
// Sets every key of a JSON object file through set_option; a key in `extra_keys` is returned
// (as text) instead. Unknown keys are errors, so a typo never passes silently.
std::vector<std::pair<std::string, std::string>> options_from_json_file(const std::vector<ConfigOption>& options,
                                                                        const std::string& path,
                                                                        const std::vector<std::string>& extra_keys);
// The same from JSON text; `where` names its source in messages ("config file runs/a/config.json").
std::vector<std::pair<std::string, std::string>> options_from_json(const std::vector<ConfigOption>& options,
                                                                   const std::string& json, const std::string& where,
                                                                   const std::vector<std::string>& extra_keys);
// The help lines: "  --name  help [default]".
std::string options_help(const std::vector<ConfigOption>& options);

}  // namespace mcdl
