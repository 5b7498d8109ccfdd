#include "mcdl/run/options.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/error.h"

namespace mcdl {
namespace {

template <class T>
T parse_number(const std::string& name, const std::string& value, const char* what) {
  std::istringstream in(value);
  T v{};
  in >> v;
  check(!value.empty() && !in.fail() && in.eof(), "--", name, ": expected ", what, ", got '", value, "'");
  return v;
}

template <class T>
std::string number_text(T value) {
  std::ostringstream os;
  os << value;
  return os.str();
}

std::string value_text(const ConfigOption& option) {
  return std::visit(
      [](const auto& field) -> std::string {
        using F = std::decay_t<decltype(field)>;
        if constexpr (std::is_same_v<F, TextField>) {
          return field.get();
        } else {
          using T = std::remove_pointer_t<F>;
          if constexpr (std::is_same_v<T, std::string>) return *field;
          else if constexpr (std::is_same_v<T, bool>) return *field ? "true" : "false";
          else if constexpr (std::is_same_v<T, std::optional<int64_t>> || std::is_same_v<T, std::optional<double>>)
            return field->has_value() ? number_text(**field) : "auto";
          else return number_text(*field);
        }
      },
      option.field);
}

// Sets a number field from its text (an optional: "auto" or the legacy "-1" unset it).
template <class T>
void set_number(const std::string& name, const std::string& value, T* field) {
  if constexpr (std::is_same_v<T, double>) {
    *field = parse_number<double>(name, value, "a number");
  } else {
    check(std::is_signed_v<T> || value.find('-') == std::string::npos, "--", name,
          ": expected a non-negative integer, got '", value, "'");
    *field = parse_number<T>(name, value, "an integer");
  }
}

template <class T>
void set_optional(const std::string& name, const std::string& value, std::optional<T>* field) {
  if (value == "auto" || value == "-1") {
    field->reset();
    return;
  }
  T number{};
  set_number(name, value, &number);
  *field = number;
}

}  // namespace

void throw_option_error(const std::string& option, const std::string& message) { fail("--", option, ": ", message); }

void set_option(const std::vector<ConfigOption>& options, const std::string& name, const std::string& value) {
  for (const auto& option : options) {
    if (option.name != name) continue;
    std::visit(
        [&](const auto& field) {
          using F = std::decay_t<decltype(field)>;
          if constexpr (std::is_same_v<F, TextField>) {
            field.set(value);
          } else {
            using T = std::remove_pointer_t<F>;
            if constexpr (std::is_same_v<T, std::string>) {
              *field = value;
            } else if constexpr (std::is_same_v<T, bool>) {
              check(value == "true" || value == "false" || value == "1" || value == "0", "--", name,
                    ": expected true or false, got '", value, "'");
              *field = value == "true" || value == "1";
            } else if constexpr (std::is_same_v<T, std::optional<int64_t>> ||
                                 std::is_same_v<T, std::optional<double>>) {
              set_optional(name, value, field);
            } else {
              set_number(name, value, field);
            }
          }
        },
        option.field);
    return;
  }
  fail("unknown option --", name, " (see --help)");
}

std::string options_to_json(const std::vector<ConfigOption>& options,
                            const std::vector<std::pair<std::string, std::string>>& extra) {
  nlohmann::ordered_json j;
  for (const auto& [key, value] : extra) j[key] = value;
  for (const auto& option : options)
    std::visit(
        [&](const auto& field) {
          using F = std::decay_t<decltype(field)>;
          if constexpr (std::is_same_v<F, TextField>) {
            // A text that is a whole number (--clusters) is written as one.
            const std::string text = field.get();
            std::istringstream in(text);
            int64_t number = 0;
            if (!text.empty() && (in >> number) && in.eof()) j[option.name] = number;
            else j[option.name] = text;
          } else {
            using T = std::remove_pointer_t<F>;
            if constexpr (std::is_same_v<T, std::optional<int64_t>> || std::is_same_v<T, std::optional<double>>) {
              if (field->has_value()) j[option.name] = **field;
              else j[option.name] = "auto";
            } else {
              j[option.name] = *field;
            }
          }
        },
        option.field);
  return j.dump(2) + "\n";
}

std::vector<std::pair<std::string, std::string>> options_from_json_file(const std::vector<ConfigOption>& options,
                                                                        const std::string& path,
                                                                        const std::vector<std::string>& extra_keys) {
  std::ifstream in(path);
  check(in.good(), "cannot read the config file ", path);
  std::ostringstream text;
  text << in.rdbuf();
  return options_from_json(options, text.str(), "config file " + path, extra_keys);
}

std::vector<std::pair<std::string, std::string>> options_from_json(const std::vector<ConfigOption>& options,
                                                                   const std::string& json, const std::string& where,
                                                                   const std::vector<std::string>& extra_keys) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json);
  } catch (const std::exception& e) {
    fail(where, " is not valid JSON: ", e.what());
  }
  check(j.is_object(), where, ": expected a JSON object");
  std::vector<std::pair<std::string, std::string>> extra;
  for (auto& [key, value] : j.items()) {
    std::string text;
    if (value.is_string()) text = value.get<std::string>();
    else if (value.is_boolean()) text = value.get<bool>() ? "true" : "false";
    else if (value.is_number_integer() || value.is_number_unsigned()) text = value.dump();
    else if (value.is_number_float()) {
      std::ostringstream os;
      os.precision(17);
      os << value.get<double>();
      text = os.str();
    } else {
      fail(where, ": '", key, "' has an unsupported value ", value.dump());
    }
    if (std::find(extra_keys.begin(), extra_keys.end(), key) != extra_keys.end()) {
      extra.emplace_back(key, text);
      continue;
    }
    try {
      set_option(options, key, text);
    } catch (const Error& e) {
      fail(where, ": ", e.what());
    }
  }
  return extra;
}

std::string options_help(const std::vector<ConfigOption>& options) {
  std::string out;
  for (const auto& option : options) {
    const std::string value = value_text(option);
    char buf[64];
    std::snprintf(buf, sizeof buf, "  --%-22s ", option.name.c_str());
    out += buf + option.help + (value.empty() ? "" : " [" + value + "]") + "\n";
  }
  return out;
}

}  // namespace mcdl
