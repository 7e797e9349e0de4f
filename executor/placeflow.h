// placeflow: a dataflow graph runtime with device placement (TensorFlow 1.x graph mode, small).
//
//   #include <placeflow/placeflow.h>
//   pf::Graph g;
//   pf::Scope root = pf::Scope::Root(&g);
//   pf::Output x = pf::ops::Placeholder(root.WithOpName("x"), pf::DT_FLOAT, {-1, 4});
//   pf::Variable w = pf::GetVariable(root.WithVariableScope("dense"), "w", {4, 2});
//   pf::Output y = pf::ops::Relu(root, pf::ops::MatMul(root, x, w.value()));
//   pf::Session sess(g);
//   sess.Run({}, {}, {pf::GlobalVariablesInitializer(root)});
//   auto out = sess.Run({{x, pf::Tensor(pf::DT_FLOAT, {3, 4})}}, {y});
#pragma once

#include "core/device_name.h"
#include "core/dtype.h"
#include "core/logging.h"
#include "core/shape.h"
#include "core/status.h"
#include "core/tensor.h"
#include "core/thread_pool.h"
#include "devices/device.h"
#include "devices/device_manager.h"
#include "devices/device_set.h"
#include "devices/gpu_probe.h"
#include "executor/executor.h"
#include "executor/gradient_checker.h"
#include "executor/saver.h"
#include "executor/session.h"
#include "executor/trace.h"
#include "graph/export.h"
#include "graph/gradients.h"
#include "graph/graph.h"
#include "graph/kernel.h"
#include "graph/op_registry.h"
#include "graph/scope.h"
#include "graph/variables.h"
#include "ops/ops.h"
#include "ops/train/towers.h"
#include "ops/train/train.h"
#include "placer/placer.h"
