// The methods of --method: each names a base method (mcdl/method/base_method.h) and whether MCDL
// (mcdl/method/mcdl.h) attaches to it. A new method is a base method's files and a line here.
#pragma once
#include <memory>

#include "mcdl/method/base_method.h"

namespace mcdl {

struct MethodRecipe {
  std::unique_ptr<BaseMethod> base;
  bool with_mcdl = false;
};
MethodRecipe make_method(Method method, const MethodContext& context);

}  // namespace mcdl
