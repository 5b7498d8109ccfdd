#include "data/label_names.h"

#include "io/csv_field.h"

namespace mcdl {

std::string labels_csv(const Dataset& dataset) {
  std::string text = "label,class_id,name,group\n";
  int64_t label = 0;
  for (const auto* classes : {&dataset.old_classes, &dataset.new_classes})
    for (int64_t id : *classes) {
      const bool named = id >= 0 && static_cast<size_t>(id) < dataset.class_names.size();
      text += std::to_string(label++) + "," + std::to_string(id) + "," +
              csv_field(named ? dataset.class_names[static_cast<size_t>(id)] : "") + "," +
              (classes == &dataset.old_classes ? "old" : "new") + "\n";
    }
  return text;
}

}  // namespace mcdl
