#include "placeflow/data/idx.h"

#include <fmt/format.h>
#include <zlib.h>

#include <cstring>
#include <filesystem>

namespace pf::data {
namespace {

uint32_t BigEndian(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

std::string Find(const std::string& dir, const std::string& stem) {
  for (const std::string& name : {stem + ".gz", stem}) {
    std::string path = dir + "/" + name;
    if (std::filesystem::exists(path)) return path;
  }
  return dir + "/" + stem + ".gz";
}

}  // namespace

Status ReadIdx(const std::string& path, std::vector<int64_t>* dims, std::vector<uint8_t>* data) {
  gzFile f = gzopen(path.c_str(), "rb");  // reads plain files too
  if (f == nullptr) return errors::NotFound("Cannot open IDX file '", path, "'");
  std::vector<uint8_t> bytes;
  uint8_t buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof(buf))) > 0) bytes.insert(bytes.end(), buf, buf + n);
  int err = 0;
  const char* msg = gzerror(f, &err);
  std::string error_text = msg ? msg : "";
  gzclose(f);
  if (n < 0 || (err != Z_OK && err != Z_STREAM_END)) {
    return errors::InvalidArgument("Corrupt or truncated gzip data in '", path, "': ", error_text);
  }
  if (bytes.size() < 4)
    return errors::InvalidArgument("IDX file '", path, "' is truncated: ", bytes.size(), " bytes");
  const uint32_t magic = BigEndian(bytes.data());
  // 0x08: unsigned bytes; the low byte is the number of dims.
  if ((magic >> 8) != 0x08 || (magic & 0xff) == 0 || (magic & 0xff) > 4) {
    return errors::InvalidArgument("IDX file '", path, "' has a wrong magic number 0x",
                                   fmt::format("{:08x}", magic),
                                   " (expected 0x00000801 for labels or 0x00000803 for images)");
  }
  const int rank = magic & 0xff;
  if (bytes.size() < 4 + 4 * static_cast<size_t>(rank))
    return errors::InvalidArgument("IDX file '", path, "' has a truncated header");
  dims->clear();
  size_t expected = 1;
  for (int d = 0; d < rank; ++d) {
    dims->push_back(BigEndian(bytes.data() + 4 + 4 * d));
    // Four 32-bit dims can overflow 64 bits: such a header promises more than any file holds.
    if (__builtin_mul_overflow(expected, static_cast<size_t>(dims->back()), &expected)) {
      return errors::InvalidArgument("IDX file '", path, "' has dims whose product overflows");
    }
  }
  const size_t offset = 4 + 4 * rank;
  if (bytes.size() - offset < expected) {
    return errors::InvalidArgument("IDX file '", path, "' is truncated: header promises ", expected,
                                   " bytes of data, found ", bytes.size() - offset);
  }
  data->assign(bytes.begin() + offset, bytes.begin() + offset + expected);
  return Status::OK();
}

std::pair<std::string, std::string> MnistPaths(const std::string& dir, Split split) {
  const std::string prefix = split == Split::kTrain ? "train" : "t10k";
  return {Find(dir, prefix + "-images-idx3-ubyte"), Find(dir, prefix + "-labels-idx1-ubyte")};
}

StatusOr<MnistArrays> LoadMnist(const std::string& dir, Split split) {
  auto [images, labels] = MnistPaths(dir, split);
  return LoadIdxPair(images, labels);
}

StatusOr<MnistArrays> LoadIdxPair(const std::string& images_path, const std::string& labels_path) {
  std::vector<int64_t> idims, ldims;
  std::vector<uint8_t> pixels, labels;
  PF_RETURN_IF_ERROR(ReadIdx(images_path, &idims, &pixels));
  PF_RETURN_IF_ERROR(ReadIdx(labels_path, &ldims, &labels));
  if (idims.size() != 3 || ldims.size() != 1 || idims[0] != ldims[0]) {
    return errors::InvalidArgument("MNIST files '", images_path, "' and '", labels_path,
                                   "' disagree: ", idims.size(), "-d images of ",
                                   idims.empty() ? 0 : idims[0], " and ",
                                   ldims.empty() ? 0 : ldims[0], " labels");
  }
  const int64_t n = idims[0];
  int64_t features = 0;
  // With no images the data check in ReadIdx passes whatever the other two dims are.
  if (__builtin_mul_overflow(idims[1], idims[2], &features)) {
    return errors::InvalidArgument("IDX file '", images_path, "' has images of ", idims[1], "x",
                                   idims[2], " pixels: more than 2^63");
  }
  MnistArrays d;
  d.images = Tensor(DT_FLOAT, {n, features});
  d.labels = Tensor(DT_INT32, {n});
  float* img = d.images.data<float>();
  for (size_t i = 0; i < pixels.size(); ++i) img[i] = pixels[i] / 255.f;
  for (int64_t i = 0; i < n; ++i) {
    if (labels[i] > 9)
      return errors::InvalidArgument("Label ", int(labels[i]), " at index ", i, " of '",
                                     labels_path, "' is not a digit class");
    d.labels.data<int32_t>()[i] = labels[i];
  }
  return d;
}

MnistArrays Take(const MnistArrays& d, int64_t n) {
  if (n <= 0 || n >= d.size()) return d;
  MnistArrays out;
  const int64_t features = d.images.dim(1);
  out.images = Tensor(DT_FLOAT, {n, features});
  out.labels = Tensor(DT_INT32, {n});
  std::memcpy(out.images.raw_data(), d.images.raw_data(), n * features * sizeof(float));
  std::memcpy(out.labels.raw_data(), d.labels.raw_data(), n * sizeof(int32_t));
  return out;
}

void Gather(const MnistArrays& d, const std::vector<int64_t>& order, int64_t begin, int64_t count,
            Tensor* images, Tensor* labels) {
  const int64_t features = d.images.dim(1);
  if (begin < 0 || count < 0 || begin + count > static_cast<int64_t>(order.size())) {
    throw Error(errors::OutOfRange("Gather of examples [", begin, ", ", begin + count,
                                   ") from an order of ", order.size()));
  }
  *images = Tensor(DT_FLOAT, {count, features});
  *labels = Tensor(DT_INT32, {count});
  for (int64_t i = 0; i < count; ++i) {
    int64_t src = order[begin + i];
    if (src < 0 || src >= d.size())
      throw Error(errors::OutOfRange("Example ", src, " of a data set of ", d.size()));
    std::memcpy(images->data<float>() + i * features, d.images.data<float>() + src * features,
                features * sizeof(float));
    labels->data<int32_t>()[i] = d.labels.data<int32_t>()[src];
  }
}

}  // namespace pf::data
