// placeflow: a dataflow graph runtime with device placement (TensorFlow 1.x graph mode, small).
// This umbrella header is the public API: graph building, ops, variables, training, Session,
// Tensor, Status/Error and device names. Runtime internals (Executor, KernelRegistry, the
// placer, devices) are not in it; programs that extend the runtime include their headers from
// <placeflow/...> by name (docs/api.md, "Public API").
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

#include <fmt/core.h>

#include "placeflow/core/device_name.h"
#include "placeflow/core/dtype.h"
#include "placeflow/core/shape.h"
#include "placeflow/core/status.h"
#include "placeflow/core/tensor.h"
#include "placeflow/executor/session.h"
#include "placeflow/executor/trace.h"
#include "placeflow/graph/export.h"
#include "placeflow/graph/graph.h"
#include "placeflow/graph/scope.h"
#include "placeflow/graph/variable.h"
#include "placeflow/io/record_io.h"
#include "placeflow/ops/control_flow.h"
#include "placeflow/ops/everyday_ops.h"
#include "placeflow/ops/image_ops.h"
#include "placeflow/ops/ops.h"
#include "placeflow/ops/parse/parse_ops.h"
#include "placeflow/train/gradient_checker.h"
#include "placeflow/train/gradients.h"
#include "placeflow/train/layers.h"
#include "placeflow/train/loss_scale_optimizer.h"
#include "placeflow/train/optimizers.h"
#include "placeflow/train/replica_device_setter.h"
#include "placeflow/train/rnn.h"
#include "placeflow/train/saver.h"
#include "placeflow/train/sync_replicas_optimizer.h"
#include "placeflow/train/towers.h"
#include "placeflow/train/variables.h"
