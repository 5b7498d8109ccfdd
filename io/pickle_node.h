// The inside of io/pickle.h's values, shared by the values (io/pickle_value.cpp) and the machine
// that builds them from a stream (io/pickle.cpp); nothing else includes it.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "io/pickle.h"

namespace mcdl {

// The shared part of strings, containers and objects.
struct PickleNode {
  std::string text;                      // string / bytes / big integer bytes / global or object name
  std::vector<PickleValue> items;        // list / tuple
  std::vector<PickleDictEntry> entries;  // dict
  // dict: position in entries by key (dict_key_text), so that a dict of n keys is built in O(n)
  // and not by comparing each new key with every earlier one; rebuilt when out of step.
  std::unordered_map<std::string, size_t> entry_index;
  PickleValue args, state;               // object: argument tuple; object or dict: BUILD state
  bool sealed = false;                   // stored inside another value: no longer modifiable
  int64_t height = 0;                    // nesting depth: 0 for text, 1 + the deepest child for containers
};

// "None", "int", "dict", ... for messages.
const char* pickle_kind_label(PickleValue::Kind kind);

}  // namespace mcdl
