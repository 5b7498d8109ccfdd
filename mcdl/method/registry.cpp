#include "mcdl/method/registry.h"

#include "mcdl/method/gcd.h"
#include "mcdl/method/kmeans_baseline.h"
#include "mcdl/method/simgcd.h"

namespace mcdl {

MethodRecipe make_method(Method method, const MethodContext& context) {
  switch (method) {
    case Method::simgcd: return {std::make_unique<SimGcd>(context), false};
    case Method::simgcd_mcdl: return {std::make_unique<SimGcd>(context), true};
    case Method::gcd: return {std::make_unique<Gcd>(context), false};
    case Method::gcd_mcdl: return {std::make_unique<Gcd>(context), true};
    case Method::kmeans: return {std::make_unique<KMeansBaseline>(context), false};
  }
  return {};
}

}  // namespace mcdl
