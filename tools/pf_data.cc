// pf-data: data files for placeflow.
//
//   pf-data convert --idx DIR --out FILE.tfrecord [--split train|test] [--compression GZIP]
//       MNIST/Fashion-MNIST IDX files -> TFRecord of tf.Example, TensorFlow's convert_to_records
//       layout: image_raw (bytes, rows*cols uint8), label (int64), height, width, depth (int64),
//       and pixels (int64, rows*cols: the feature seed 002's reader asks for).
//   pf-data convert --images DIR --out FILE.tfrecord [--compression GZIP]
//       a folder of class subfolders of JPEG/PNG files -> TFRecord of tf.Example in TensorFlow's
//       image layout: image/encoded (the file's bytes), image/format (jpeg or png),
//       image/class/label (int64), image/class/text, image/height, image/width, image/channels,
//       image/filename.
//   pf-data inspect FILE [--compression GZIP]
//       the number of records and the first record's features.
#include <placeflow/placeflow.h>

#include <cstdio>
#include <string>
#include <vector>

#include "placeflow/data/idx.h"
#include "placeflow/data/image_folder.h"
#include "placeflow/io/example.h"
#include "placeflow/io/file_bytes.h"
#include "placeflow/io/image_codec.h"
#include "tools/flags.h"
#include "tools/run_main.h"

namespace {

constexpr const char* kUsage =
    "usage: pf-data convert --idx DIR --out FILE.tfrecord [--split train|test] "
    "[--compression GZIP|ZLIB] [--limit N]\n"
    "       pf-data convert --images DIR --out FILE.tfrecord [--compression GZIP|ZLIB]\n"
    "       pf-data inspect FILE [--compression GZIP|ZLIB]\n";

std::string IdxFile(const std::string& dir, const std::string& stem) {
  for (const std::string& name : {stem + ".gz", stem}) {
    std::FILE* f = std::fopen((dir + "/" + name).c_str(), "rb");
    if (f != nullptr) {
      std::fclose(f);
      return dir + "/" + name;
    }
  }
  return dir + "/" + stem + ".gz";
}

#if defined(PF_WITH_PROTOBUF)
// A folder of class subfolders (data::FromImageFolder's rules, in sorted order) as tf.Examples
// holding each file's encoded bytes; every file is decoded once to check it and to record its
// size. A file that does not decode is an error naming it.
pf::Status ConvertImages(const std::string& dir, const std::string& out, pf::io::Compression c) {
  pf::data::ImageFolderOptions o;
  o.shuffle = false;
  PF_ASSIGN_OR_RETURN(pf::data::ImageFolder folder, pf::data::FromImageFolder(dir, o));
  PF_ASSIGN_OR_RETURN(auto writer, pf::io::RecordWriter::Open(out, c));
  for (size_t i = 0; i < folder.files.size(); ++i) {
    const std::string& path = folder.files[i];
    PF_ASSIGN_OR_RETURN(const std::string encoded, pf::io::ReadFileBytes(path));
    pf::StatusOr<pf::Tensor> image = pf::image::DecodeImage(encoded);
    if (!image.ok()) return image.status().WithSuffix(" (file '" + path + "')");
    const int32_t label = folder.labels[i];
    pf::io::ExampleBuilder b;
    b.AddBytes("image/encoded", {encoded})
        .AddBytes("image/format",
                  {pf::image::SniffFormat(encoded) == pf::image::Format::kPng ? "png" : "jpeg"})
        .AddInt64("image/class/label", {label})
        .AddBytes("image/class/text", {folder.class_names[label]})
        .AddInt64("image/height", {image->dim(0)})
        .AddInt64("image/width", {image->dim(1)})
        .AddInt64("image/channels", {image->dim(2)})
        .AddBytes("image/filename", {path});
    PF_RETURN_IF_ERROR(writer->Write(b.Serialize()));
  }
  PF_RETURN_IF_ERROR(writer->Close());
  std::printf("wrote %zu images of %zu classes to %s (%lld files that are not images skipped)\n",
              folder.files.size(), folder.class_names.size(), out.c_str(),
              static_cast<long long>(folder.num_skipped));
  return pf::Status::OK();
}
#endif

pf::Status Convert(int argc, const char* const* argv) {
  std::string idx, images, out, split = "train", compression;
  int64_t limit = 0;
  pf::flags::FlagSet f("pf-data convert",
                       "writes MNIST-format IDX files as a TFRecord file of tf.Example");
  f.String("--idx", &idx, "directory of the IDX files (train-images-idx3-ubyte[.gz], ...)")
      .Value("DIR");
  f.String("--images", &images,
           "or a folder of class subfolders of JPEG/PNG files (their encoded bytes are written)")
      .Value("DIR");
  f.String("--out", &out, "the TFRecord file to write").Value("FILE");
  f.String("--split", &split, "which files: train (train-*) or test (t10k-*)", {"train", "test"});
  f.String("--compression", &compression, "TFRecord compression", {"", "NONE", "GZIP", "ZLIB"})
      .Default("none");
  f.Int("--limit", &limit, "write only the first N examples (0: all)", 0, 1'000'000'000);
  PF_RETURN_IF_ERROR(f.Parse(argc, argv));
  if (f.help_requested()) {
    std::fputs(f.Help().c_str(), stdout);
    return pf::Status::OK();
  }
  if (idx.empty() == images.empty() || out.empty()) {
    return pf::errors::InvalidArgument(
        "pf-data convert needs --idx DIR or --images DIR, and --out FILE");
  }
#if !defined(PF_WITH_PROTOBUF)
  return pf::errors::Unimplemented(
      "pf-data convert writes tf.Example, which needs a build with protobuf (PF_WITH_PROTOBUF)");
#else
  if (!images.empty()) {
    PF_ASSIGN_OR_RETURN(pf::io::Compression c, pf::io::ParseCompression(compression));
    return ConvertImages(images, out, c);
  }
  const std::string prefix = split == "train" ? "train" : "t10k";
  std::vector<int64_t> idims, ldims;
  std::vector<uint8_t> pixels, labels;
  PF_RETURN_IF_ERROR(
      pf::data::ReadIdx(IdxFile(idx, prefix + "-images-idx3-ubyte"), &idims, &pixels));
  PF_RETURN_IF_ERROR(
      pf::data::ReadIdx(IdxFile(idx, prefix + "-labels-idx1-ubyte"), &ldims, &labels));
  if (idims.size() != 3 || ldims.size() != 1 || idims[0] != ldims[0]) {
    return pf::errors::InvalidArgument("IDX files in '", idx, "' disagree: ", idims.size(),
                                       "-d images of ", idims.empty() ? 0 : idims[0], " and ",
                                       ldims.empty() ? 0 : ldims[0], " labels");
  }
  PF_ASSIGN_OR_RETURN(pf::io::Compression c, pf::io::ParseCompression(compression));
  PF_ASSIGN_OR_RETURN(auto writer, pf::io::RecordWriter::Open(out, c));
  const int64_t rows = idims[1], cols = idims[2], size = rows * cols;
  const int64_t n = limit > 0 ? std::min(limit, idims[0]) : idims[0];
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* img = pixels.data() + i * size;
    pf::io::ExampleBuilder b;
    b.AddBytes("image_raw", {std::string(reinterpret_cast<const char*>(img), size)})
        .AddInt64("label", {labels[i]})
        .AddInt64("height", {rows})
        .AddInt64("width", {cols})
        .AddInt64("depth", {1})
        .AddInt64("pixels", {size});
    PF_RETURN_IF_ERROR(writer->Write(b.Serialize()));
  }
  PF_RETURN_IF_ERROR(writer->Close());
  std::printf("wrote %lld examples (%lldx%lld) to %s%s%s\n", static_cast<long long>(n),
              static_cast<long long>(rows), static_cast<long long>(cols), out.c_str(),
              c == pf::io::Compression::kNone ? "" : " compression ",
              std::string(pf::io::CompressionName(c)).c_str());
  return pf::Status::OK();
#endif
}

pf::Status Inspect(int argc, const char* const* argv) {
  std::string compression;
  pf::flags::FlagSet f("pf-data inspect FILE",
                       "counts a TFRecord file's records and prints the "
                       "first one's features");
  f.String("--compression", &compression, "TFRecord compression", {"", "NONE", "GZIP", "ZLIB"})
      .Default("none");
  // The file is the first argument; flags follow.
  if (argc < 2) return pf::errors::InvalidArgument("pf-data inspect needs a FILE");
  const std::string file = argv[1];
  if (file == "--help" || file == "-h") {
    std::fputs(f.Help().c_str(), stdout);
    return pf::Status::OK();
  }
  PF_RETURN_IF_ERROR(f.Parse(argc - 1, argv + 1));
  PF_ASSIGN_OR_RETURN(pf::io::Compression c, pf::io::ParseCompression(compression));
  PF_ASSIGN_OR_RETURN(auto reader, pf::io::RecordReader::Open(file, {.compression = c}));
  std::string record, first;
  int64_t count = 0;
  uint64_t bytes = 0;
  while (true) {
    PF_ASSIGN_OR_RETURN(bool more, reader->Next(&record));
    if (!more) break;
    if (count == 0) first = record;
    bytes += record.size();
    ++count;
  }
  std::printf("%s: %lld records, %llu bytes of data\n", file.c_str(), static_cast<long long>(count),
              static_cast<unsigned long long>(bytes));
  if (count == 0) return pf::Status::OK();
#if defined(PF_WITH_PROTOBUF)
  pf::StatusOr<std::string> described = pf::io::DescribeExample(first);
  if (described.ok()) {
    std::printf("first record (tf.Example):\n%s", described->c_str());
  } else {
    std::printf("first record: %zu bytes, not a tf.Example\n", first.size());
  }
#else
  std::printf("first record: %zu bytes (built without protobuf: features not shown)\n",
              first.size());
#endif
  return pf::Status::OK();
}

int Main(int argc, const char* const* argv) {
  const std::string cmd = argc > 1 ? argv[1] : "";
  pf::Status s;
  if (cmd == "convert") {
    s = Convert(argc - 1, argv + 1);
  } else if (cmd == "inspect") {
    s = Inspect(argc - 1, argv + 1);
  } else if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  } else {
    std::fputs(kUsage, stderr);
    return 2;
  }
  if (!s.ok()) {
    std::fprintf(stderr, "pf-data %s: %s\n", cmd.c_str(), s.ToString().c_str());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return pf::tools::RunMain("pf-data", Main, argc, argv); }
