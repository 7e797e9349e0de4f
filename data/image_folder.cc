#include "placeflow/data/image_folder.h"

#include <algorithm>
#include <filesystem>
#include <random>

#include "placeflow/core/allocator.h"
#include "placeflow/core/logging.h"
#include "placeflow/io/file_bytes.h"
#include "placeflow/io/image_codec.h"
#include "placeflow/ops/image/resize.h"

namespace pf::data {
namespace {

namespace fs = std::filesystem;

// Keras's image extensions (lower case).
bool IsImageFile(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png" || ext == ".gif" || ext == ".bmp";
}

Status CheckOptions(const ImageFolderOptions& o) {
  if (o.image_size.size() != 2 || o.image_size[0] <= 0 || o.image_size[1] <= 0)
    return errors::InvalidArgument("FromImageFolder: image_size must be [height, width], positive");
  if (o.channels != 1 && o.channels != 3 && o.channels != 4)
    return errors::InvalidArgument("FromImageFolder: channels must be 1, 3 or 4, got ", o.channels);
  if (o.interpolation != "bilinear" && o.interpolation != "nearest") {
    return errors::InvalidArgument("FromImageFolder: interpolation must be 'bilinear' or ",
                                   "'nearest', got '", o.interpolation, "'");
  }
  if (o.validation_split < 0 || o.validation_split >= 1)
    return errors::InvalidArgument("FromImageFolder: validation_split must be in [0, 1)");
  if (!o.subset.empty() && o.subset != "training" && o.subset != "validation") {
    return errors::InvalidArgument("FromImageFolder: subset must be 'training' or 'validation', ",
                                   "got '", o.subset, "'");
  }
  if ((o.validation_split > 0) != !o.subset.empty()) {
    return errors::InvalidArgument(
        "FromImageFolder: validation_split and subset go together (a split needs a subset to "
        "return, a subset needs a split)");
  }
  return Status::OK();
}

// One file: decoded, resized to float [h, w, c] (values 0..255, as Keras gives them).
StatusOr<Tensor> LoadImage(const std::string& path, const ImageFolderOptions& o,
                           const Tensor* into) {
  PF_ASSIGN_OR_RETURN(std::string bytes, io::ReadFileBytes(path));
  StatusOr<Tensor> image = DecodeAndResize(bytes, o, into);
  if (!image.ok()) return image.status().WithSuffix(" (file '" + path + "')");
  return image;
}

}  // namespace

StatusOr<Tensor> DecodeAndResize(std::string_view bytes, const ImageFolderOptions& o,
                                 const Tensor* into) {
  PF_RETURN_IF_ERROR(CheckOptions(o));
  PF_ASSIGN_OR_RETURN(Tensor img, image::DecodeImage(bytes, o.channels));
  const int64_t h = img.dim(0), w = img.dim(1), c = img.dim(2);
  const int64_t oh = o.image_size[0], ow = o.image_size[1];
  if (into != nullptr && (into->dtype() != DT_FLOAT || into->shape() != Shape{oh, ow, c})) {
    return errors::InvalidArgument("DecodeAndResize: the output must be float ",
                                   Shape{oh, ow, c}.ToString(), ", got ", DTypeName(into->dtype()),
                                   " ", into->shape().ToString());
  }
  Tensor out;
  if (into != nullptr) {
    out = *into;
  } else {
    PF_ASSIGN_OR_RETURN(out, Tensor::Allocate(CpuAllocator(), DT_FLOAT, {oh, ow, c}));
  }
  const image::ResizeMode half_pixel{.align_corners = false, .half_pixel_centers = true};
  if (o.interpolation == "bilinear") {
    image::ResizeBilinearImpl(img.data<uint8_t>(), 1, h, w, c, out.data<float>(), oh, ow,
                              half_pixel);
  } else {
    Tensor nearest(DT_UINT8, {oh, ow, c});
    image::ResizeNearestImpl<false>(img.data<uint8_t>(), 1, h, w, c, nearest.data<uint8_t>(), oh,
                                    ow, half_pixel);
    for (int64_t i = 0; i < nearest.num_elements(); ++i)
      out.data<float>()[i] = nearest.data<uint8_t>()[i];
  }
  return out;
}

StatusOr<ImageFolder> FromImageFolder(const std::string& dir, const ImageFolderOptions& o) {
  PF_RETURN_IF_ERROR(CheckOptions(o));
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return errors::NotFound("Image folder '", dir, "' not found");
  ImageFolder result;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec))
    if (e.is_directory()) result.class_names.push_back(e.path().filename().string());
  std::sort(result.class_names.begin(), result.class_names.end());
  if (result.class_names.empty()) {
    return errors::InvalidArgument("Image folder '", dir,
                                   "' has no class subfolders (one per class, holding its images)");
  }
  std::vector<std::pair<std::string, int32_t>> files;
  for (size_t c = 0; c < result.class_names.size(); ++c) {
    std::vector<std::string> own;
    for (const fs::directory_entry& e :
         fs::recursive_directory_iterator(fs::path(dir) / result.class_names[c], ec)) {
      if (!e.is_regular_file()) continue;
      if (IsImageFile(e.path())) {
        own.push_back(e.path().string());
      } else {
        ++result.num_skipped;
      }
    }
    std::sort(own.begin(), own.end());
    for (std::string& f : own) files.emplace_back(std::move(f), static_cast<int32_t>(c));
  }
  if (files.empty()) {
    return errors::InvalidArgument("No images found in directory '", dir, "' (",
                                   result.class_names.size(), " class folders, ",
                                   result.num_skipped, " files that are not images)");
  }
  if (o.shuffle) std::shuffle(files.begin(), files.end(), std::mt19937_64(o.seed));
  const auto num_validation = static_cast<size_t>(o.validation_split * files.size());
  if (o.subset == "training") files.resize(files.size() - num_validation);
  if (o.subset == "validation") files.erase(files.begin(), files.end() - num_validation);
  result.num_files = static_cast<int64_t>(files.size());
  result.per_class.assign(result.class_names.size(), 0);
  Tensor paths(DT_STRING, {result.num_files}), labels(DT_INT32, {result.num_files});
  for (size_t i = 0; i < files.size(); ++i) {
    paths.data<std::string>()[i] = files[i].first;
    labels.data<int32_t>()[i] = files[i].second;
    ++result.per_class[files[i].second];
    result.files.push_back(files[i].first);
    result.labels.push_back(files[i].second);
  }
  PF_LOG_INFO("Found {} files belonging to {} classes in '{}'{}{}", result.num_files,
              result.class_names.size(), dir, o.subset.empty() ? "" : ", using them for ",
              o.subset);
  if (result.num_skipped > 0)
    PF_LOG_INFO("Skipped {} files that are not images in '{}'", result.num_skipped, dir);
  const ElementSpec spec = {{DT_FLOAT, Shape{o.image_size[0], o.image_size[1], o.channels}},
                            {DT_INT32, Shape{}}};
  result.dataset =
      Dataset::FromTensorSlices({paths, labels})
          .Map(
              [o](Element e, const MapContext& ctx) -> StatusOr<Element> {
                // Batched after this map: straight into the batch's row (MapContext::rows).
                const Tensor* into = ctx.rows != nullptr ? &(*ctx.rows)[0] : nullptr;
                PF_ASSIGN_OR_RETURN(Tensor img, LoadImage(e[0].data<std::string>()[0], o, into));
                return Element{std::move(img), std::move(e[1])};
              },
              std::max(o.num_parallel_calls, 1), spec);
  return result;
}

}  // namespace pf::data
