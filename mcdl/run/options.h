// A table of named settings (command-line flag = JSON key) over a config struct's fields, so
// that parsing, saving, loading and help text come from one list. Used by the training and
// pretraining configs.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace mcdl {

// A setting with a text form of its own (an enum, a list): how to write it and how to read it
// (set throws with a message that names the choices).
struct TextField {
  std::function<std::string()> get;
  std::function<void(const std::string&)> set;
};

// A field that is a std::optional<number> reads "auto" as unset (the method's or dataset's value)
// and is written so; "-1", the unset value of run directories written before the settings were
// typed, reads as unset too.
struct ConfigOption {
  std::string name;  // the command-line flag without "--", and the JSON key
  std::string help;
  std::variant<std::string*, int64_t*, uint64_t*, double*, bool*, std::optional<int64_t>*, std::optional<double>*,
               TextField>
      field;
};

// Throws "--option: message".
[[noreturn]] void throw_option_error(const std::string& option, const std::string& message);

// A TextField over an enum field with its names: the error of an unknown name lists them.
template <class E>
TextField enum_field(const std::string& option, E* field, std::vector<std::pair<E, std::string>> names) {
  return {[field, names] {
            for (const auto& [value, name] : names)
              if (value == *field) return name;
            return std::string();
          },
          [option, field, names](const std::string& text) {
            std::string choices;
            for (size_t i = 0; i < names.size(); ++i) {
              if (names[i].second == text) {
                *field = names[i].first;
                return;
              }
              choices += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i].second;
            }
            throw_option_error(option, "expected " + choices + ", got '" + text + "'");
          }};
}

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
