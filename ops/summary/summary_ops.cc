// ScalarSummary, HistogramSummary, ImageSummary and MergeSummary: TensorFlow's v1 summary ops.
// Each outputs a serialized tensorflow.Summary (io/proto/summary.proto) as a string scalar;
// ImageSummary's PNGs come from image::EncodePng (io/image_codec.h).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <set>

#include "placeflow/devices/device.h"
#include "placeflow/graph/kernel.h"
#include "placeflow/io/image_codec.h"
#include "placeflow/io/proto/summary.pb.h"
#include "placeflow/ops/ops.h"
#include "placeflow/ops/summary/summary.h"

namespace pf {
namespace summary {

const std::vector<double>& DefaultBucketLimits() {
  static const std::vector<double> kLimits = [] {
    std::vector<double> pos;
    for (double v = 1e-12; v < 1e20; v *= 1.1) pos.push_back(v);
    pos.push_back(DBL_MAX);
    std::vector<double> all;
    for (auto it = pos.rbegin(); it != pos.rend(); ++it) all.push_back(-*it);
    all.push_back(0.0);
    all.insert(all.end(), pos.begin(), pos.end());
    return all;
  }();
  return kLimits;
}

}  // namespace summary

namespace {

const std::vector<DType> kRealTypes = {DT_FLOAT, DT_DOUBLE,   DT_INT32, DT_INT64,
                                       DT_HALF,  DT_BFLOAT16, DT_UINT8};

// Element i of a real tensor as a double.
double ValueAt(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DT_FLOAT:
      return t.data<float>()[i];
    case DT_DOUBLE:
      return t.data<double>()[i];
    case DT_INT32:
      return t.data<int32_t>()[i];
    case DT_INT64:
      return static_cast<double>(t.data<int64_t>()[i]);
    case DT_UINT8:
      return t.data<uint8_t>()[i];
    case DT_HALF:
      return HalfToFloat(t.data<Half>()[i]);
    case DT_BFLOAT16:
      return BFloat16ToFloat(t.data<BFloat16>()[i]);
    default:
      return 0;
  }
}

// The bucket of v: the index of the first limit above it (std::upper_bound, clamped to the last
// bucket), found from a logarithmic estimate corrected against the limits themselves, so the
// result is exactly upper_bound's (a search over 1551 limits per value cost ~10x more).
size_t BucketOf(const std::vector<double>& limits, double v) {
  static const double kInvLog = 1.0 / std::log(1.1);
  const int64_t size = static_cast<int64_t>(limits.size());
  const int64_t zero = size / 2;  // limits[zero] == 0
  const double a = std::fabs(v);
  const double e = a < 1e-12 ? -1.0 : std::min(std::log(a) + 27.631021115928547, 100.0) * kInvLog;
  const int64_t k = static_cast<int64_t>(e);  // log(a / 1e-12) / log(1.1), capped past 1e20
  int64_t i = v > 0 ? zero + 2 + k : (v < 0 ? zero - k : zero + 1);
  if (v < 0 && a < 1e-12) i = zero;
  i = std::clamp<int64_t>(i, 0, size - 1);
  while (i > 0 && limits[i - 1] > v) --i;
  while (i < size - 1 && limits[i] <= v) ++i;
  return static_cast<size_t>(i);
}

Status SetSummaryOutput(OpKernelContext* ctx, const tensorflow::Summary& s) {
  PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
  if (!s.SerializeToString(&out->flat<std::string>()[0]))
    return errors::Internal("cannot serialize a Summary");
  return Status::OK();
}

class ScalarSummaryOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    const Tensor& tags = ctx->input(0);
    const Tensor& values = ctx->input(1);
    if (tags.shape() != values.shape()) {
      return errors::InvalidArgument("tags and values are not the same shape: ",
                                     tags.shape().ToString(), " != ", values.shape().ToString());
    }
    tensorflow::Summary s;
    for (int64_t i = 0; i < tags.num_elements(); ++i) {
      auto* v = s.add_value();
      v->set_tag(tags.flat<std::string>()[i]);
      v->set_simple_value(static_cast<float>(ValueAt(values, i)));
    }
    return SetSummaryOutput(ctx, s);
  }
  bool IsExpensive() const override { return false; }
};

PF_REGISTER_OP(OpDef("ScalarSummary")
                   .Input("tags", "string")
                   .Input("values", "T")
                   .Output("summary", "string")
                   .TypeAttr("T", kRealTypes)
                   .SetNotDifferentiable()
                   .SetShapeFn(ScalarShape));
PF_REGISTER_KERNEL(KernelDef("ScalarSummary", kDeviceCpu), ScalarSummaryOp);

class HistogramSummaryOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    const Tensor& tag = ctx->input(0);
    const Tensor& values = ctx->input(1);
    if (tag.num_elements() != 1)
      return errors::InvalidArgument("tag must be a scalar, got shape ", tag.shape().ToString());
    const std::string& name = tag.flat<std::string>()[0];
    const std::vector<double>& limits = summary::DefaultBucketLimits();
    std::vector<double> counts(limits.size(), 0.0);
    double lo = DBL_MAX, hi = -DBL_MAX, sum = 0, sum_sq = 0;
    const int64_t n = values.num_elements();
    auto add = [&](double v) -> bool {
      if (!std::isfinite(v)) return false;
      counts[BucketOf(limits, v)] += 1;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      sum += v;
      sum_sq += v * v;
      return true;
    };
    bool finite = true;
    if (values.dtype() == DT_FLOAT) {  // the common case, without a dtype switch per element
      const float* p = values.data<float>();
      for (int64_t i = 0; i < n && finite; ++i) finite = add(p[i]);
    } else {
      for (int64_t i = 0; i < n && finite; ++i) finite = add(ValueAt(values, i));
    }
    if (!finite) {
      for (int64_t i = 0; i < n; ++i) {
        const double v = ValueAt(values, i);
        if (!std::isfinite(v))
          return errors::InvalidArgument(std::isnan(v) ? "Nan" : "Infinity",
                                         " in summary histogram for: ", name);
      }
    }
    tensorflow::Summary s;
    auto* value = s.add_value();
    value->set_tag(name);
    tensorflow::HistogramProto* h = value->mutable_histo();
    h->set_min(n ? lo : 0);
    h->set_max(n ? hi : 0);
    h->set_num(static_cast<double>(n));
    h->set_sum(sum);
    h->set_sum_squares(sum_sq);
    // Runs of empty buckets collapse into one, which keeps the last limit of the run (TF's
    // encoding without preserve_zero_buckets).
    for (size_t i = 0; i < counts.size();) {
      double end = limits[i], count = counts[i];
      ++i;
      if (count <= 0) {
        while (i < counts.size() && counts[i] <= 0) {
          end = limits[i];
          count = counts[i];
          ++i;
        }
      }
      h->add_bucket_limit(end);
      h->add_bucket(count);
    }
    return SetSummaryOutput(ctx, s);
  }
};

PF_REGISTER_OP(OpDef("HistogramSummary")
                   .Input("tag", "string")
                   .Input("values", "T")
                   .Output("summary", "string")
                   .TypeAttr("T", kRealTypes, DT_FLOAT)
                   .SetNotDifferentiable()
                   .SetShapeFn(ScalarShape));
PF_REGISTER_KERNEL(KernelDef("HistogramSummary", kDeviceCpu), HistogramSummaryOp);

class ImageSummaryOp : public OpKernel {
 public:
  explicit ImageSummaryOp(const Node& n)
      : OpKernel(n), max_images_(n.attr<int64_t>("max_images")) {}
  Status Compute(OpKernelContext* ctx) override {
    const Tensor& tag = ctx->input(0);
    const Tensor& images = ctx->input(1);
    if (tag.num_elements() != 1)
      return errors::InvalidArgument("tag must be a scalar, got shape ", tag.shape().ToString());
    if (images.rank() != 4 || (images.dim(3) != 1 && images.dim(3) != 3 && images.dim(3) != 4)) {
      return errors::InvalidArgument(
          "images must be 4-D [batch, height, width, channels] with 1, 3 or 4 channels, got ",
          images.shape().ToString());
    }
    const int64_t h = images.dim(1), w = images.dim(2), c = images.dim(3);
    if (h > INT32_MAX || w > INT32_MAX || h * w * c > (int64_t{1} << 31))
      return errors::InvalidArgument("image too large: ", images.shape().ToString());
    const int64_t batch = std::min<int64_t>(images.dim(0), max_images_);
    const int64_t per_image = h * w * c;
    const std::string& base = tag.flat<std::string>()[0];
    tensorflow::Summary s;
    Tensor frame(DT_UINT8, {h, w, c});  // one image's pixels, PNG-encoded below
    uint8_t* pixels = frame.data<uint8_t>();
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t offset = b * per_image;
      if (images.dtype() == DT_UINT8) {
        std::memcpy(pixels, images.data<uint8_t>() + offset, per_image);
      } else {
        // TF's scaling: all values >= 0: scale so the largest is 255; otherwise shift 0 to 127
        // and scale so the smallest is 0 or the largest 255.
        double lo = DBL_MAX, hi = -DBL_MAX;
        for (int64_t i = 0; i < per_image; ++i) {
          const double v = ValueAt(images, offset + i);
          if (!std::isfinite(v)) continue;
          lo = std::min(lo, v);
          hi = std::max(hi, v);
        }
        double scale = 1, shift = 0;
        if (lo >= 0) {
          scale = hi > 0 ? 255.0 / hi : 0;
        } else {
          scale = std::min(lo < 0 ? 127.0 / -lo : DBL_MAX, hi > 0 ? 128.0 / hi : DBL_MAX);
          shift = 127;
        }
        for (int64_t i = 0; i < per_image; ++i) {
          const double v = ValueAt(images, offset + i);
          // Non-finite pixels get TF's default bad colour, red (for one channel: 0).
          const double p =
              std::isfinite(v) ? v * scale + shift : ((i % c) == 0 && c >= 3 ? 255 : 0);
          pixels[i] = static_cast<uint8_t>(std::clamp(std::lround(p), 0L, 255L));
        }
      }
      auto* value = s.add_value();
      value->set_tag(batch == 1 ? base + "/image" : base + "/image/" + std::to_string(b));
      auto* img = value->mutable_image();
      img->set_height(static_cast<int>(h));
      img->set_width(static_cast<int>(w));
      img->set_colorspace(static_cast<int>(c));
      PF_ASSIGN_OR_RETURN(std::string png, image::EncodePng(frame));
      img->set_encoded_image_string(std::move(png));
    }
    return SetSummaryOutput(ctx, s);
  }

 private:
  int64_t max_images_;
};

PF_REGISTER_OP(OpDef("ImageSummary")
                   .Input("tag", "string")
                   .Input("tensor", "T")
                   .Output("summary", "string")
                   .TypeAttr("T", {DT_FLOAT, DT_DOUBLE, DT_HALF, DT_UINT8}, DT_FLOAT)
                   .Attr("max_images", int64_t{3})
                   .SetNotDifferentiable()
                   .SetShapeFn(ScalarShape));
PF_REGISTER_KERNEL(KernelDef("ImageSummary", kDeviceCpu), ImageSummaryOp);

class MergeSummaryOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    tensorflow::Summary merged;
    std::set<std::string> tags;
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      const Tensor& in = ctx->input(i);
      for (int64_t k = 0; k < in.num_elements(); ++k) {
        tensorflow::Summary one;
        if (!one.ParseFromString(in.flat<std::string>()[k]))
          return errors::InvalidArgument("Could not parse one of the summary inputs (input ", i,
                                         ")");
        for (auto& v : *one.mutable_value()) {
          if (!v.tag().empty() && !tags.insert(v.tag()).second)
            return errors::InvalidArgument("Duplicate tag ", v.tag(), " found in summary inputs");
          *merged.add_value() = std::move(v);
        }
      }
    }
    return SetSummaryOutput(ctx, merged);
  }
  bool IsExpensive() const override { return false; }
};

PF_REGISTER_OP(OpDef("MergeSummary")
                   .InputList("inputs", "string", "N")
                   .Output("summary", "string")
                   .RequiredAttr("N")
                   .SetNotDifferentiable()
                   .SetShapeFn(ScalarShape));
PF_REGISTER_KERNEL(KernelDef("MergeSummary", kDeviceCpu), MergeSummaryOp);

// Node names from tags: TF's rule, characters outside [A-Za-z0-9_./-] become '_'.
std::string NodeNameForTag(const std::string& tag) {
  std::string out = tag;
  for (char& ch : out) {
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.' || ch == '/' ||
          ch == '-'))
      ch = '_';
  }
  while (!out.empty() && out.front() == '/') out.erase(out.begin());
  return out.empty() ? "summary" : out;
}

Output AddToCollection(const Scope& scope, Output summary) {
  scope.graph()->AddToCollection(summary::kSummaries, summary);
  return summary;
}

}  // namespace

namespace summary {

// The summary node is named after the tag (uniquified: "loss_1" when "loss" is taken, as in
// TensorFlow), its tag constant "<name>/tag".
Output SummaryNode(const Scope& scope, const char* op, const std::string& tag, Output values,
                   const AttrMap& attrs = {}) {
  const std::string name = NodeNameForTag(tag);
  Output t = ops::Const(scope.WithOpName(name + "/tag"), Tensor::Scalar<std::string>(tag));
  NodeBuilder b(scope.WithOpName(name), op);
  b.Input(t).Input(values);
  for (const auto& [k, v] : attrs) b.Attr(k, v);
  return AddToCollection(scope, b.Finalize());
}

Output Scalar(const Scope& scope, const std::string& tag, Output value) {
  return SummaryNode(scope, "ScalarSummary", tag, value);
}

Output Histogram(const Scope& scope, const std::string& tag, Output values) {
  return SummaryNode(scope, "HistogramSummary", tag, values);
}

Output Image(const Scope& scope, const std::string& tag, Output images, int max_images) {
  if (max_images < 1)
    throw Error(errors::InvalidArgument("max_images must be >= 1, got ", max_images, " for ", tag));
  return SummaryNode(scope, "ImageSummary", tag, images,
                     {{"max_images", AttrValue(int64_t{max_images})}});
}

Output Merge(const Scope& scope, const std::vector<Output>& inputs) {
  return NodeBuilder(scope, "MergeSummary", "Merge/MergeSummary").InputList(inputs).Finalize();
}

Output MergeAll(const Scope& scope, const std::string& name_scope_prefix) {
  std::vector<Output> chosen;
  for (const Output& o : scope.graph()->GetCollection(kSummaries)) {
    if (o.node->name().rfind(name_scope_prefix, 0) == 0) chosen.push_back(o);
  }
  if (chosen.empty()) return Output();
  return Merge(scope, chosen);
}

}  // namespace summary
}  // namespace pf
