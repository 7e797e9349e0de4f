// tf.Example: building and parsing serialized tf.train.Example protos (TensorFlow's wire format,
// io/proto/example.proto). Needs protobuf: these functions exist when the library is built with
// PF_WITH_PROTOBUF (defined for consumers too); the header itself needs no protobuf headers.
//
//   pf::io::ExampleSpec spec;
//   spec.fixed.push_back({"label", pf::DT_INT64, {}});                      // required scalar
//   spec.fixed.push_back({"weights", pf::DT_FLOAT, {3}, pf::Tensor::FromVector<float>({0, 0, 0})});
//   spec.var_len.push_back({"tags", pf::DT_STRING});
//   pf::io::ParsedExamples p = pf::io::ParseExamples(serialized, spec).value();
//   p.dense[0];          // int64 [batch]
//   p.sparse[0].values;  // string [n]; indices int64 [n, 2] (example, position); dense_shape [2]
//
//   pf::io::ExampleBuilder b;
//   b.AddInt64("label", {7}).AddBytes("image_raw", {bytes});
//   std::string record = b.Serialize();
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "placeflow/core/status.h"
#include "placeflow/core/tensor.h"

namespace pf::io {

// tf.io.FixedLenFeature: exactly shape.num_elements() values of `dtype` (float, int64 or
// string, which is TensorFlow's bytes). A missing feature takes `default_value` (same number of
// elements, or one value repeated); without one it is an error.
struct FixedLenFeature {
  std::string key;
  DType dtype = DT_FLOAT;
  Shape shape;
  Tensor default_value;  // uninitialised: the feature is required
};

// tf.io.VarLenFeature: any number of values (a missing feature has none), as a sparse tensor.
struct VarLenFeature {
  std::string key;
  DType dtype = DT_FLOAT;
};

struct ExampleSpec {
  std::vector<FixedLenFeature> fixed;
  std::vector<VarLenFeature> var_len;
};

// TensorFlow's SparseTensor: values[i] sits at indices[i] ([n, rank] int64) of a dense tensor of
// dense_shape ([rank] int64). Batched: rank 2, (example, position), dense_shape [batch, longest].
struct SparseValues {
  Tensor indices;
  Tensor values;
  Tensor dense_shape;
};

struct ParsedExamples {
  std::vector<Tensor> dense;         // one per spec.fixed, shape [batch] + shape
  std::vector<SparseValues> sparse;  // one per spec.var_len
};

// Parses a batch (tf.io.parse_example). `names` (optional, one per example) appear in errors as
// TensorFlow's "Name: ..." (else "<unknown>"). InvalidArgument naming the key, the example index,
// the expected and actual dtype or count, or the bytes that are no tf.Example.
StatusOr<ParsedExamples> ParseExamples(std::span<const std::string> serialized,
                                       const ExampleSpec& spec,
                                       std::span<const std::string> names = {});
// One example (tf.io.parse_single_example): dense outputs without the batch dimension, sparse
// indices [n, 1] and dense_shape [1].
StatusOr<ParsedExamples> ParseSingleExample(std::string_view serialized, const ExampleSpec& spec);
// Checks a spec (dtypes float/int64/string, fully defined shapes, defaults that fit, unique keys).
Status ValidateExampleSpec(const ExampleSpec& spec);

// Builds one tf.train.Example. Adding a key twice replaces its values.
class ExampleBuilder {
 public:
  ExampleBuilder& AddInt64(const std::string& key, std::vector<int64_t> values);
  ExampleBuilder& AddFloat(const std::string& key, std::vector<float> values);
  ExampleBuilder& AddBytes(const std::string& key, std::vector<std::string> values);
  // The serialized tf.train.Example (keys in sorted order: the same features give the same bytes).
  std::string Serialize() const;

 private:
  struct Values {
    DType dtype;
    std::vector<int64_t> i;
    std::vector<float> f;
    std::vector<std::string> b;
  };
  std::map<std::string, Values> features_;
};

// One line per feature of a serialized tf.train.Example, sorted by key:
//   label: int64 [1] 7
//   image_raw: bytes [1] <784 bytes>
// InvalidArgument when the bytes are no tf.Example. At most `max_values` values per feature.
StatusOr<std::string> DescribeExample(std::string_view serialized, int max_values = 8);

}  // namespace pf::io
