// Launchers of the array family's device code: Cast, Fill and OneHot (fill_ops.cu); strided box
// copies, Gather and its scatter-add gradient (copy_ops.cu); Pad (pad_ops.cu).
#pragma once

#include "placeflow/ops/gpu/launch.h"

namespace pf::gpu {

void Cast(Type from, const void* x, Type to, void* y, int64_t n, Stream stream);
// out[i] = value, or *value_on_device when that is set.
template <typename T>
void Fill(T* out, int64_t n, T value, const T* value_on_device, Stream stream);
// out[i, k] = k == indices[i] ? on : off, depth columns.
template <typename T, typename Index>
void OneHot(const Index* indices, T* out, int64_t n, int64_t depth, T on, T off, Stream stream);

// Copies a box of `dims` (rank <= kMaxDims) elements of `elem_size` bytes: the element at
// index i goes from in[in_offset + sum i_d in_strides_d] to out[out_offset + sum i_d
// out_strides_d] (offsets and strides in elements). Slice, SliceGrad and Transpose use it.
struct StridedBox {
  int rank = 0;
  int64_t dims[kMaxDims] = {};
  int64_t in_strides[kMaxDims] = {};
  int64_t out_strides[kMaxDims] = {};
  int64_t in_offset = 0;
  int64_t out_offset = 0;
};
void StridedCopy(int elem_size, const void* in, void* out, const StridedBox& box, Stream stream);
// out[i, :] = params[indices[i], :] for rows of `row_elems` elements; an index outside
// [0, limit) gives a row of zeros (TensorFlow's GPU behaviour; the CPU kernel errors).
template <typename Index>
void Gather(int elem_size, const void* params, const Index* indices, void* out, int64_t num_indices,
            int64_t row_elems, int64_t limit, Stream stream);
// out (zeroed first) [limit, row] += grad[i, :] at row indices[i] (atomic adds).
template <typename T, typename Index>
void ScatterAdd(const T* grad, const Index* indices, T* out, int64_t num_indices, int64_t row_elems,
                int64_t limit, Stream stream);

// Pad (pad_ops.cu): out, of out_dims, is x, of in_dims, placed at `before` in every dim, with
// zeros (all-zero bytes) around it. Each output element is written once.
struct PadDims {
  int rank = 0;
  int64_t in_dims[kMaxDims] = {};
  int64_t out_dims[kMaxDims] = {};
  int64_t before[kMaxDims] = {};
};
void Pad(int elem_size, const void* x, void* out, const PadDims& dims, Stream stream);

}  // namespace pf::gpu
