// The nn formulas, written once for both devices (see ops/gpu/host_device.cuh): activations and
// their gradients (nn_ops.cc, nn_ops.cu) and the losses' elementwise terms (loss_ops.cc,
// loss_ops.cu). The activation gradients take the forward *output* y, as TensorFlow's do:
//
//   PF_REGISTER_KERNEL(Cpu("ReluGrad", DT_FLOAT), ActivationGradOp<float, ReluGradF>);
//   PF_GPU_BINARY(ReluGradF, float)   // nn_ops.cu
#pragma once

#include <cmath>

#include "placeflow/ops/gpu/host_device.cuh"

namespace pf {

// ---- activations: T(T) ----
struct ReluF {
  template <typename T>
  PF_HOST_DEVICE T operator()(T x) const {
    return x > T(0) ? x : T(0);
  }
};
struct SigmoidF {
  template <typename T>
  PF_HOST_DEVICE T operator()(T x) const {
    return T(1) / (T(1) + std::exp(-x));
  }
};
struct TanhF {
  template <typename T>
  PF_HOST_DEVICE T operator()(T x) const {
    return std::tanh(x);
  }
};

// ---- activation gradients: T(g, y) from the incoming gradient and the forward output ----
struct ReluGradF {
  template <typename T>
  PF_HOST_DEVICE T operator()(T g, T y) const {
    return y > T(0) ? g : T(0);
  }
};
// SigmoidGrad and TanhGrad take TensorFlow's order: (y, dy), the activation's output first.
struct SigmoidGradF {
  template <typename T>
  PF_HOST_DEVICE T operator()(T y, T dy) const {
    return dy * y * (T(1) - y);
  }
};
struct TanhGradF {
  template <typename T>
  PF_HOST_DEVICE T operator()(T y, T dy) const {
    return dy * (T(1) - y * y);
  }
};

// ---- activations with their gradients taken from the *features* x, as TensorFlow's are
// (activation_ops.cc): Relu6, LeakyRelu, Softplus. ----
struct Relu6F {
  template <typename T>
  PF_HOST_DEVICE T operator()(T x) const {
    return x < T(0) ? T(0) : (x > T(6) ? T(6) : x);
  }
};
// alpha is the op's float attr, converted to T as TensorFlow's kernel does.
struct LeakyReluF {
  float alpha;
  template <typename T>
  PF_HOST_DEVICE T operator()(T x) const {
    return x > T(0) ? x : x * static_cast<T>(alpha);
  }
};
// log(1 + e^x) as max(x, 0) + log1p(e^-|x|): e^-|x| <= 1, so nothing overflows, and for large
// |x| the result is x (or e^x) to the last bit, as TensorFlow's thresholded form gives.
struct SoftplusF {
  template <typename T>
  PF_HOST_DEVICE T operator()(T x) const {
    return (x > T(0) ? x : T(0)) + std::log1p(std::exp(-std::abs(x)));
  }
};
struct Relu6GradF {
  template <typename T>
  PF_HOST_DEVICE T operator()(T g, T x) const {
    return x > T(0) && x < T(6) ? g : T(0);
  }
};
struct LeakyReluGradF {
  float alpha;
  template <typename T>
  PF_HOST_DEVICE T operator()(T g, T x) const {
    return x > T(0) ? g : g * static_cast<T>(alpha);
  }
};
// g * sigmoid(x); e^-x overflowing to inf gives 0, the limit.
struct SoftplusGradF {
  template <typename T>
  PF_HOST_DEVICE T operator()(T g, T x) const {
    return g / (T(1) + std::exp(-x));
  }
};

// ---- losses ----
// Sigmoid cross-entropy of logits x and labels z: max(x, 0) - x z + log(1 + exp(-|x|)), which
// overflows for no x. (The max is written as std::max(x, 0) evaluates it, NaN included.)
struct SigmoidXentF {
  template <typename T>
  PF_HOST_DEVICE T operator()(T x, T z) const {
    return (x < T(0) ? T(0) : x) - x * z + std::log1p(std::exp(-std::abs(x)));
  }
};
// (p - l)^2, the mean squared error's term.
struct SquaredDiffF {
  template <typename T>
  PF_HOST_DEVICE T operator()(T a, T b) const {
    return (a - b) * (a - b);
  }
};
// One class's share of softmax cross-entropy, given its row's max `m` and log(sum exp(x - m)):
// adds -p log softmax(x) to `loss` and returns d loss / d x = softmax(x) - p.
template <typename T>
PF_HOST_DEVICE T SoftmaxXentTerm(T x, T p, T m, T log_sum, T& loss) {
  const T log_softmax = x - m - log_sum;
  if (p != T(0)) loss -= p * log_softmax;
  return std::exp(log_softmax) - p;
}

}  // namespace pf
