// The value codecs of TensorFlow's protobuf formats (io/proto/graph.proto): dtypes (TensorFlow's
// DataType numbers; reference types read as their value types), shapes, tensors and attrs. GraphDef
// files (graph_def.h) and the cluster runtime's wire messages (distributed/) share them. Internal:
// it needs the generated messages (a build with PF_WITH_PROTOBUF).
//
//   tensorflow::TensorShapeProto p;
//   pf::ShapeToProto(shape, &p);
//   PF_ASSIGN_OR_RETURN(pf::Tensor t, pf::TensorFromProto(node_def.attr().at("value").tensor()));
#pragma once

#include "placeflow/core/status.h"
#include "placeflow/core/tensor.h"
#include "placeflow/graph/attr.h"
#include "placeflow/io/proto/graph.pb.h"

namespace pf {

StatusOr<tensorflow::DataType> DTypeToProto(DType t);  // InvalidArgument when GraphDef has none
StatusOr<DType> DTypeFromProto(int t);                 // Unimplemented for the unsupported ones
void ShapeToProto(const Shape& s, tensorflow::TensorShapeProto* p);
StatusOr<Shape> ShapeFromProto(const tensorflow::TensorShapeProto& p);
// `t` in host memory: numeric types as tensor_content, strings as string_val.
Status TensorToProto(const Tensor& t, tensorflow::TensorProto* p);
// tensor_content, or a typed value list (none: zeros; one: repeated).
StatusOr<Tensor> TensorFromProto(const tensorflow::TensorProto& p);
Status AttrToProto(const AttrValue& v, tensorflow::AttrValue* p);
// `declared` is the op schema's default for the attr when it has one: it tells an empty list's
// element type.
StatusOr<AttrValue> AttrFromProto(const tensorflow::AttrValue& p, const AttrValue* declared);

}  // namespace pf
