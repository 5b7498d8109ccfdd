// An exponential moving average of a set of parameters (the mean teacher of DINO and of
// mean-teacher GCD): after each optimizer step, every averaged tensor a moves towards its
// live twin v as a = m·a + (1 − m)·v, in place, on the tensors' device.
#pragma once
#include <vector>

#include "engine/optim/optimizer.h"

namespace mcdl {

// `average` and `live` pair up by position and must carry the same names, shapes, dtypes and
// devices (the message names the first that does not); momentum in [0, 1] (0: a copy of live).
void ema_update(const std::vector<NamedParameter>& average, const std::vector<NamedParameter>& live,
                double momentum);

}  // namespace mcdl
