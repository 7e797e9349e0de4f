// MNIST-format data (MNIST, Fashion-MNIST): IDX files, gzip-compressed or not.
//
//   PF_ASSIGN_OR_RETURN(pf::data::Dataset train, pf::data::LoadMnist(dir,
//   pf::data::Split::kTrain)); train.images: float [N, 784] scaled to [0, 1]; train.labels: int32
//   [N]
#pragma once

#include <string>

#include "placeflow/core/tensor.h"

namespace pf::data {

enum class Split { kTrain, kTest };

struct Dataset {
  Tensor images;  // float [N, rows*cols], values / 255
  Tensor labels;  // int32 [N]
  int64_t size() const { return labels.num_elements(); }
};

// Reads one IDX file (magic 0x00000803 for images, 0x00000801 for labels), returning its
// dims and bytes. Errors name the file: wrong magic number, truncated data, unreadable file.
Status ReadIdx(const std::string& path, std::vector<int64_t>* dims, std::vector<uint8_t>* data);
StatusOr<Dataset> LoadMnist(const std::string& dir, Split split);
// The first `n` examples (all when n <= 0 or n >= size).
Dataset Take(const Dataset& d, int64_t n);
// Rows [begin, begin + count) of `d` in the order given by `order`.
void Gather(const Dataset& d, const std::vector<int64_t>& order, int64_t begin, int64_t count,
            Tensor* images, Tensor* labels);

}  // namespace pf::data
