// labels.csv (data/label_names.h): one row per remapped label, in the GCD split's order (the old
// classes, then the new ones), each with the dataset's class id, its name where the layout has
// one (quoted as CSV where it must be) and its group.
#include <doctest/doctest.h>

#include "data/label_names.h"

using namespace mcdl;

TEST_CASE("labels.csv: the remapped labels in split order, named where the layout names them") {
  Dataset d;
  d.num_classes = 4;
  d.old_classes = {2, 0};
  d.new_classes = {3, 1};
  d.class_names = {"Coat", "Sneaker, white", "Bag"};  // class 3 has no name
  CHECK(labels_csv(d) == "label,class_id,name,group\n0,2,Bag,old\n1,0,Coat,old\n2,3,,new\n3,1,\"Sneaker, white\",new\n");
  d.class_names.clear();  // a layout without names (CUB, CIFAR): the ids only
  CHECK(labels_csv(d) == "label,class_id,name,group\n0,2,,old\n1,0,,old\n2,3,,new\n3,1,,new\n");
}
