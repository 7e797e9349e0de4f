// The optimizer update formulas, written once for both devices (see ops/gpu/host_device.cuh):
// the CPU kernels (apply_ops.cc) build an update from the scalar inputs once per call, the GPU
// kernels (apply_ops.cu) once per thread from the scalars in device memory; either applies it
// to each element of the variable and its slots:
//
//   const AdamUpdate<T> update(beta1_power, beta2_power, lr, beta1, beta2, epsilon);
//   for (int64_t i = 0; i < n; ++i) update(var[i], m[i], v[i], grad[i]);
#pragma once

#include <cmath>

#include "placeflow/ops/gpu/host_device.cuh"

namespace pf {

// var -= lr * g.
template <typename T>
struct GradientDescentUpdate {
  T lr;
  PF_HOST_DEVICE void operator()(T& var, T g) const { var -= lr * g; }
};

// accum = momentum * accum + g; var -= lr * accum (Nesterov: var -= lr * (g + momentum * accum)).
template <typename T>
struct MomentumUpdate {
  T lr, momentum;
  bool nesterov;
  PF_HOST_DEVICE void operator()(T& var, T& accum, T g) const {
    accum = momentum * accum + g;
    var -= nesterov ? lr * (g + momentum * accum) : lr * accum;
  }
};

// lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t); m += (g - m)(1 - beta1);
// v += (g^2 - v)(1 - beta2); var -= lr_t * m / (sqrt(v) + epsilon).
template <typename T>
struct AdamUpdate {
  PF_HOST_DEVICE AdamUpdate(T beta1_power, T beta2_power, T lr, T beta1, T beta2, T epsilon)
      : lr_t(lr * std::sqrt(T(1) - beta2_power) / (T(1) - beta1_power)),
        one_minus_beta1(T(1) - beta1),
        one_minus_beta2(T(1) - beta2),
        epsilon(epsilon) {}
  PF_HOST_DEVICE void operator()(T& var, T& m, T& v, T g) const {
    m += (g - m) * one_minus_beta1;
    v += (g * g - v) * one_minus_beta2;
    var -= lr_t * m / (std::sqrt(v) + epsilon);
  }
  T lr_t, one_minus_beta1, one_minus_beta2, epsilon;
};

// ms += (g^2 - ms)(1 - rho); mom = momentum * mom + lr * g / sqrt(ms + epsilon); var -= mom.
template <typename T>
struct RMSPropUpdate {
  PF_HOST_DEVICE RMSPropUpdate(T lr, T rho, T momentum, T epsilon)
      : lr(lr), one_minus_rho(T(1) - rho), momentum(momentum), epsilon(epsilon) {}
  PF_HOST_DEVICE void operator()(T& var, T& ms, T& mom, T g) const {
    ms += (g * g - ms) * one_minus_rho;
    mom = momentum * mom + lr * g / std::sqrt(ms + epsilon);
    var -= mom;
  }
  T lr, one_minus_rho, momentum, epsilon;
};

// accum += g^2; var -= lr * g / sqrt(accum).
template <typename T>
struct AdagradUpdate {
  T lr;
  PF_HOST_DEVICE void operator()(T& var, T& accum, T g) const {
    accum += g * g;
    var -= lr * g / std::sqrt(accum);
  }
};

// shadow -= (shadow - value)(1 - decay): ExponentialMovingAverage's update, in one pass instead
// of TF's Sub, Mul and AssignSub (the same float operations in the same order).
template <typename T>
struct MovingAverageUpdate {
  PF_HOST_DEVICE explicit MovingAverageUpdate(T decay) : one_minus_decay(T(1) - decay) {}
  PF_HOST_DEVICE void operator()(T& shadow, T value) const {
    shadow -= one_minus_decay * (shadow - value);
  }
  T one_minus_decay;
};

}  // namespace pf
