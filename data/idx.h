// MNIST-format data (MNIST, Fashion-MNIST): IDX files, gzip-compressed or not, as whole arrays.
// (Dataset::FromIdx streams the same files as a dataset.)
//
//   PF_ASSIGN_OR_RETURN(pf::data::MnistArrays train,
//                       pf::data::LoadMnist(dir, pf::data::Split::kTrain));
//   // train.images: float [N, 784] scaled to [0, 1]; train.labels: int32 [N]
#pragma once

#include <string>
#include <vector>

#include "placeflow/core/tensor.h"

namespace pf::data {

enum class Split { kTrain, kTest };

struct MnistArrays {
  Tensor images;  // float [N, rows*cols], values / 255
  Tensor labels;  // int32 [N]
  int64_t size() const { return labels.num_elements(); }
};

// Reads one IDX file (magic 0x00000803 for images, 0x00000801 for labels), returning its
// dims and bytes. Errors name the file: wrong magic number, truncated data, unreadable file.
Status ReadIdx(const std::string& path, std::vector<int64_t>* dims, std::vector<uint8_t>* data);
// An images file and its labels file (errors name both when they disagree).
StatusOr<MnistArrays> LoadIdxPair(const std::string& images_path, const std::string& labels_path);
// `dir`'s train-* or t10k-* pair (the .gz, else the plain file).
StatusOr<MnistArrays> LoadMnist(const std::string& dir, Split split);
// The paths LoadMnist reads: {images, labels}.
std::pair<std::string, std::string> MnistPaths(const std::string& dir, Split split);
// The first `n` examples (all when n <= 0 or n >= size).
MnistArrays Take(const MnistArrays& d, int64_t n);
// Rows [begin, begin + count) of `d` in the order given by `order`.
void Gather(const MnistArrays& d, const std::vector<int64_t>& order, int64_t begin, int64_t count,
            Tensor* images, Tensor* labels);

}  // namespace pf::data
