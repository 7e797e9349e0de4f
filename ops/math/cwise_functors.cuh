// The elementwise math formulas, written once for both devices: the CPU kernels
// (cwise_ops.cc) run them in vectorised loops, the GPU kernels (cwise_ops.cu) in grid-stride
// kernels. An op names its functor in three places, never its formula:
//
//   PF_REGISTER_KERNEL(Cpu("Add", DT_FLOAT), BinaryOp<float, AddF>);          // cwise_ops.cc
//   PF_GPU_BINARY(AddF, float)                                                // cwise_ops.cu
//   PF_REGISTER_KERNEL(Gpu("Add", DT_FLOAT), BroadcastGpuOp<float, AddF>);    // cwise_ops_gpu.cc
//
// Stateless, inline, no fmt or Status: nvcc compiles this header too.
#pragma once

#include <cmath>

#include "placeflow/ops/gpu/host_device.cuh"

namespace pf {

// ---- binary: T(T, T) ----
struct AddF {
  template <typename T>
  PF_HOST_DEVICE T operator()(T a, T b) const {
    return a + b;
  }
};
struct SubF {
  template <typename T>
  PF_HOST_DEVICE T operator()(T a, T b) const {
    return a - b;
  }
};
struct MulF {
  template <typename T>
  PF_HOST_DEVICE T operator()(T a, T b) const {
    return a * b;
  }
};
struct DivF {
  template <typename T>
  PF_HOST_DEVICE T operator()(T a, T b) const {
    return a / b;
  }
};
struct MaxF {
  template <typename T>
  PF_HOST_DEVICE T operator()(T a, T b) const {
    return a > b ? a : b;
  }
};
struct MinF {
  template <typename T>
  PF_HOST_DEVICE T operator()(T a, T b) const {
    return a < b ? a : b;
  }
};
struct PowF {
  template <typename T>
  PF_HOST_DEVICE T operator()(T a, T b) const {
    return static_cast<T>(std::pow(a, b));
  }
};

// ---- comparisons: bool(T, T) ----
struct EqualF {
  template <typename T>
  PF_HOST_DEVICE bool operator()(T a, T b) const {
    return a == b;
  }
};
struct LessF {
  template <typename T>
  PF_HOST_DEVICE bool operator()(T a, T b) const {
    return a < b;
  }
};
struct GreaterF {
  template <typename T>
  PF_HOST_DEVICE bool operator()(T a, T b) const {
    return a > b;
  }
};
struct NotEqualF {
  template <typename T>
  PF_HOST_DEVICE bool operator()(T a, T b) const {
    return a != b;
  }
};
struct LessEqualF {
  template <typename T>
  PF_HOST_DEVICE bool operator()(T a, T b) const {
    return a <= b;
  }
};
struct GreaterEqualF {
  template <typename T>
  PF_HOST_DEVICE bool operator()(T a, T b) const {
    return a >= b;
  }
};

// ---- unary: T(T) ----
struct NegF {
  template <typename T>
  PF_HOST_DEVICE T operator()(T a) const {
    return -a;
  }
};
struct SquareF {
  template <typename T>
  PF_HOST_DEVICE T operator()(T a) const {
    return a * a;
  }
};
struct SqrtF {
  template <typename T>
  PF_HOST_DEVICE T operator()(T a) const {
    return std::sqrt(a);
  }
};
struct RsqrtF {
  template <typename T>
  PF_HOST_DEVICE T operator()(T a) const {
    return T(1) / std::sqrt(a);
  }
};
struct ExpF {
  template <typename T>
  PF_HOST_DEVICE T operator()(T a) const {
    return std::exp(a);
  }
};
struct LogF {
  template <typename T>
  PF_HOST_DEVICE T operator()(T a) const {
    return std::log(a);
  }
};
struct ErfF {
  template <typename T>
  PF_HOST_DEVICE T operator()(T a) const {
    return std::erf(a);
  }
};
struct FloorF {
  template <typename T>
  PF_HOST_DEVICE T operator()(T a) const {
    return std::floor(a);
  }
};

}  // namespace pf
