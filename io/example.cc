// tf.Example through protobuf (the generated io/proto classes, package tensorflow).
#include "placeflow/io/example.h"

#include <google/protobuf/arena.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <set>

#include "placeflow/io/proto/example.pb.h"

namespace pf::io {

namespace {

using tensorflow::Feature;

std::string ExampleName(std::span<const std::string> names, size_t i) {
  return i < names.size() && !names[i].empty() ? names[i] : "<unknown>";
}

// 'ab\x00' for an error message: the first bytes of a value that failed to parse.
std::string Escaped(std::string_view v, size_t max = 64) {
  std::string s;
  for (size_t i = 0; i < std::min(v.size(), max); ++i) {
    const unsigned char c = static_cast<unsigned char>(v[i]);
    if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\') {
      s += static_cast<char>(c);
    } else {
      s += fmt::format("\\x{:02x}", c);
    }
  }
  if (v.size() > max) s += "...";
  return s;
}

DType KindDType(const Feature& f) {
  switch (f.kind_case()) {
    case Feature::kBytesList:
      return DT_STRING;
    case Feature::kFloatList:
      return DT_FLOAT;
    case Feature::kInt64List:
      return DT_INT64;
    default:
      return DT_INVALID;
  }
}

int64_t NumValues(const Feature& f) {
  switch (f.kind_case()) {
    case Feature::kBytesList:
      return f.bytes_list().value_size();
    case Feature::kFloatList:
      return f.float_list().value_size();
    case Feature::kInt64List:
      return f.int64_list().value_size();
    default:
      return 0;
  }
}

// Copies the values of `f` (of `dtype`, already checked) into `out` from element `at`.
void CopyValues(const Feature& f, DType dtype, Tensor* out, int64_t at) {
  if (NumValues(f) == 0) return;
  switch (dtype) {
    case DT_FLOAT:
      std::copy(f.float_list().value().begin(), f.float_list().value().end(),
                out->data<float>() + at);
      break;
    case DT_INT64:
      std::copy(f.int64_list().value().begin(), f.int64_list().value().end(),
                out->data<int64_t>() + at);
      break;
    case DT_STRING:
      std::copy(f.bytes_list().value().begin(), f.bytes_list().value().end(),
                out->data<std::string>() + at);
      break;
    default:
      break;
  }
}

// The feature's values must be `want` (an empty Feature, of no kind, holds no values of any).
Status CheckDType(const Feature& f, DType want, const std::string& key, const std::string& name,
                  size_t index) {
  const DType got = KindDType(f);
  if (got == DT_INVALID || got == want) return Status::OK();
  return errors::InvalidArgument("Name: ", name, ", Key: ", key, ", Index: ", index,
                                 ".  Data types don't match. Data type: ", DTypeName(got),
                                 " but expected type: ", DTypeName(want));
}

const Feature* Find(const tensorflow::Example& ex, const std::string& key) {
  const auto& map = ex.features().feature();
  auto it = map.find(key);
  return it == map.end() ? nullptr : &it->second;
}

bool SupportedDType(DType t) { return t == DT_FLOAT || t == DT_INT64 || t == DT_STRING; }

}  // namespace

Status ValidateExampleSpec(const ExampleSpec& spec) {
  std::set<std::string> keys;
  auto check = [&](const std::string& key, DType dtype) -> Status {
    if (key.empty()) return errors::InvalidArgument("A feature key is empty");
    if (!keys.insert(key).second)
      return errors::InvalidArgument("Feature key '", key, "' appears twice in the spec");
    if (!SupportedDType(dtype)) {
      return errors::InvalidArgument("Feature '", key, "' has dtype ", DTypeName(dtype),
                                     ": tf.Example holds float, int64 and string (bytes)");
    }
    return Status::OK();
  };
  for (const FixedLenFeature& f : spec.fixed) {
    PF_RETURN_IF_ERROR(check(f.key, f.dtype));
    if (!f.shape.IsFullyDefined()) {
      return errors::InvalidArgument("Fixed-length feature '", f.key, "' has shape ",
                                     f.shape.ToString(), ": it must be fully defined");
    }
    if (f.default_value.IsInitialized()) {
      if (f.default_value.dtype() != f.dtype) {
        return errors::InvalidArgument("Default of feature '", f.key, "' is ",
                                       DTypeName(f.default_value.dtype()), ", expected ",
                                       DTypeName(f.dtype));
      }
      const int64_t n = f.default_value.num_elements();
      if (n != f.shape.num_elements() && n != 1) {
        return errors::InvalidArgument("Default of feature '", f.key, "' has shape ",
                                       f.default_value.shape().ToString(), ", expected ",
                                       f.shape.ToString(), " (or one value)");
      }
    }
  }
  for (const VarLenFeature& f : spec.var_len) PF_RETURN_IF_ERROR(check(f.key, f.dtype));
  return Status::OK();
}

namespace {

using Examples = std::vector<tensorflow::Example*>;

// Parses every serialized example into the arena.
StatusOr<Examples> ParseAll(std::span<const std::string> serialized,
                            std::span<const std::string> names, google::protobuf::Arena* arena) {
  Examples examples(serialized.size());
  for (size_t i = 0; i < serialized.size(); ++i) {
    examples[i] = google::protobuf::Arena::CreateMessage<tensorflow::Example>(arena);
    if (serialized[i].size() > static_cast<size_t>(INT32_MAX) ||
        !examples[i]->ParseFromArray(serialized[i].data(),
                                     static_cast<int>(serialized[i].size()))) {
      return errors::InvalidArgument("Name: ", ExampleName(names, i), ", Index: ", i,
                                     ".  Could not parse example input, value: '",
                                     Escaped(serialized[i]), "'");
    }
  }
  return examples;
}

// One fixed-length feature of every example, stacked: [batch, shape...]; a missing one takes
// the default.
StatusOr<Tensor> DenseFeature(const FixedLenFeature& spec_f, const Examples& examples,
                              std::span<const std::string> names) {
  std::vector<int64_t> dims = {static_cast<int64_t>(examples.size())};
  for (int64_t d : spec_f.shape.dims()) dims.push_back(d);
  PF_ASSIGN_OR_RETURN(Shape shape, Shape::FromDims(dims));
  PF_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(CpuAllocator(), spec_f.dtype, shape));
  const int64_t n = spec_f.shape.num_elements();
  for (size_t i = 0; i < examples.size(); ++i) {
    const Feature* f = Find(*examples[i], spec_f.key);
    if (f == nullptr) {
      if (!spec_f.default_value.IsInitialized()) {
        return errors::InvalidArgument("Name: ", ExampleName(names, i), ", Feature: ", spec_f.key,
                                       " (data type: ", DTypeName(spec_f.dtype),
                                       ") is required but could not be found.");
      }
      const Tensor& d = spec_f.default_value;
      for (int64_t k = 0; k < n; ++k) {
        const int64_t from = d.num_elements() == 1 ? 0 : k;
        const int64_t to = static_cast<int64_t>(i) * n + k;
        if (spec_f.dtype == DT_FLOAT) t.data<float>()[to] = d.data<float>()[from];
        if (spec_f.dtype == DT_INT64) t.data<int64_t>()[to] = d.data<int64_t>()[from];
        if (spec_f.dtype == DT_STRING) t.data<std::string>()[to] = d.data<std::string>()[from];
      }
      continue;
    }
    PF_RETURN_IF_ERROR(CheckDType(*f, spec_f.dtype, spec_f.key, ExampleName(names, i), i));
    if (NumValues(*f) != n) {
      return errors::InvalidArgument("Name: ", ExampleName(names, i), ", Key: ", spec_f.key,
                                     ", Index: ", i, ".  Number of ", DTypeName(spec_f.dtype),
                                     " values != expected.  Values size: ", NumValues(*f),
                                     " but output shape: ", spec_f.shape.ToString());
    }
    CopyValues(*f, spec_f.dtype, &t, static_cast<int64_t>(i) * n);
  }
  return t;
}

// One variable-length feature of every example, as a sparse tensor [batch, longest].
StatusOr<SparseValues> SparseFeature(const VarLenFeature& spec_f, const Examples& examples,
                                     std::span<const std::string> names) {
  std::vector<const Feature*> found(examples.size(), nullptr);
  int64_t total = 0, longest = 0;
  for (size_t i = 0; i < examples.size(); ++i) {
    found[i] = Find(*examples[i], spec_f.key);
    if (found[i] == nullptr) continue;
    PF_RETURN_IF_ERROR(CheckDType(*found[i], spec_f.dtype, spec_f.key, ExampleName(names, i), i));
    total += NumValues(*found[i]);
    longest = std::max(longest, NumValues(*found[i]));
  }
  SparseValues sv;
  PF_ASSIGN_OR_RETURN(sv.indices, Tensor::Allocate(CpuAllocator(), DT_INT64, {total, 2}));
  PF_ASSIGN_OR_RETURN(sv.values, Tensor::Allocate(CpuAllocator(), spec_f.dtype, {total}));
  sv.dense_shape = Tensor::FromVector<int64_t>({static_cast<int64_t>(examples.size()), longest});
  int64_t at = 0;
  for (size_t i = 0; i < examples.size(); ++i) {
    if (found[i] == nullptr) continue;
    const int64_t n = NumValues(*found[i]);
    CopyValues(*found[i], spec_f.dtype, &sv.values, at);
    for (int64_t k = 0; k < n; ++k) {
      sv.indices.data<int64_t>()[2 * (at + k)] = static_cast<int64_t>(i);
      sv.indices.data<int64_t>()[2 * (at + k) + 1] = k;
    }
    at += n;
  }
  return sv;
}

}  // namespace

StatusOr<ParsedExamples> ParseExamples(std::span<const std::string> serialized,
                                       const ExampleSpec& spec,
                                       std::span<const std::string> names) {
  PF_RETURN_IF_ERROR(ValidateExampleSpec(spec));
  if (!names.empty() && names.size() != serialized.size()) {
    return errors::InvalidArgument("ParseExample: ", names.size(), " names for ", serialized.size(),
                                   " serialized examples");
  }
  google::protobuf::Arena arena;
  PF_ASSIGN_OR_RETURN(Examples examples, ParseAll(serialized, names, &arena));
  ParsedExamples out;
  for (const FixedLenFeature& spec_f : spec.fixed) {
    PF_ASSIGN_OR_RETURN(Tensor t, DenseFeature(spec_f, examples, names));
    out.dense.push_back(std::move(t));
  }
  for (const VarLenFeature& spec_f : spec.var_len) {
    PF_ASSIGN_OR_RETURN(SparseValues sv, SparseFeature(spec_f, examples, names));
    out.sparse.push_back(std::move(sv));
  }
  return out;
}

StatusOr<ParsedExamples> ParseSingleExample(std::string_view serialized, const ExampleSpec& spec) {
  const std::string one(serialized);
  PF_ASSIGN_OR_RETURN(ParsedExamples batch,
                      ParseExamples(std::span<const std::string>(&one, 1), spec));
  ParsedExamples out;
  for (size_t j = 0; j < spec.fixed.size(); ++j) {
    PF_ASSIGN_OR_RETURN(Tensor t, batch.dense[j].Reshaped(spec.fixed[j].shape));
    out.dense.push_back(std::move(t));
  }
  for (SparseValues& sv : batch.sparse) {
    const int64_t n = sv.values.num_elements();
    SparseValues single;
    single.indices = Tensor(DT_INT64, {n, 1});
    for (int64_t k = 0; k < n; ++k)
      single.indices.data<int64_t>()[k] = sv.indices.data<int64_t>()[2 * k + 1];
    single.values = std::move(sv.values);
    single.dense_shape = Tensor::FromVector<int64_t>({sv.dense_shape.data<int64_t>()[1]});
    out.sparse.push_back(std::move(single));
  }
  return out;
}

ExampleBuilder& ExampleBuilder::AddInt64(const std::string& key, std::vector<int64_t> values) {
  features_[key] = Values{DT_INT64, std::move(values), {}, {}};
  return *this;
}
ExampleBuilder& ExampleBuilder::AddFloat(const std::string& key, std::vector<float> values) {
  features_[key] = Values{DT_FLOAT, {}, std::move(values), {}};
  return *this;
}
ExampleBuilder& ExampleBuilder::AddBytes(const std::string& key, std::vector<std::string> values) {
  features_[key] = Values{DT_STRING, {}, {}, std::move(values)};
  return *this;
}

std::string ExampleBuilder::Serialize() const {
  tensorflow::Example ex;
  auto* map = ex.mutable_features()->mutable_feature();
  for (const auto& [key, v] : features_) {
    Feature& f = (*map)[key];
    if (v.dtype == DT_INT64) {
      f.mutable_int64_list()->mutable_value()->Add(v.i.begin(), v.i.end());
    } else if (v.dtype == DT_FLOAT) {
      f.mutable_float_list()->mutable_value()->Add(v.f.begin(), v.f.end());
    } else {
      for (const std::string& b : v.b) f.mutable_bytes_list()->add_value(b);
    }
  }
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);  // map entries in key order
    ex.SerializeToCodedStream(&coded);
  }
  return out;
}

StatusOr<std::string> DescribeExample(std::string_view serialized, int max_values) {
  tensorflow::Example ex;
  if (serialized.size() > static_cast<size_t>(INT32_MAX) ||
      !ex.ParseFromArray(serialized.data(), static_cast<int>(serialized.size()))) {
    return errors::InvalidArgument("Could not parse example input, value: '", Escaped(serialized),
                                   "'");
  }
  std::map<std::string, const Feature*> sorted;
  for (const auto& [key, f] : ex.features().feature()) sorted[key] = &f;
  std::string s;
  for (const auto& [key, f] : sorted) {
    const int64_t n = NumValues(*f);
    const DType t = KindDType(*f);
    s += fmt::format("{}: {} [{}]", key,
                     t == DT_STRING ? "bytes" : (t == DT_INVALID ? "empty" : DTypeName(t)), n);
    for (int64_t k = 0; k < std::min<int64_t>(n, max_values); ++k) {
      if (t == DT_FLOAT) s += fmt::format(" {}", f->float_list().value(k));
      if (t == DT_INT64) s += fmt::format(" {}", f->int64_list().value(k));
      if (t == DT_STRING) {
        const std::string& b = f->bytes_list().value(k);
        s += b.size() > 32 ? fmt::format(" <{} bytes>", b.size()) : " '" + Escaped(b) + "'";
      }
    }
    if (n > max_values) s += " ...";
    s += '\n';
  }
  return s;
}

}  // namespace pf::io
