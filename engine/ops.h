// Every op of the engine, for code above the engine (layers, mcdl, tools, tests).
#pragma once
#include "engine/ops/conv.h"
#include "engine/ops/elementwise.h"
#include "engine/ops/indexing.h"
#include "engine/ops/inference.h"
#include "engine/ops/linalg.h"
#include "engine/ops/loss.h"
#include "engine/ops/method.h"
#include "engine/ops/nn.h"
#include "engine/ops/reduce.h"
#include "engine/ops/shape.h"
