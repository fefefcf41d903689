// gltensor: tensors on GLSL compute shaders over SSBOs in a headless EGL + OpenGL ES 3.1 context.
#pragma once
#include "gltensor/autograd.hpp"
#include "gltensor/device.hpp"
#include "gltensor/dtype.hpp"
#include "gltensor/errors.hpp"
#include "gltensor/indexing.hpp"
#include "gltensor/linalg.hpp"
#include "gltensor/nn.hpp"
#include "gltensor/nn_functional.hpp"
#include "gltensor/ops.hpp"
#include "gltensor/random.hpp"
#include "gltensor/reduce.hpp"
#include "gltensor/tensor.hpp"
