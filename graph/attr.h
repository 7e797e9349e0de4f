// Node attributes: a small variant covering what op schemas need.
//
//   pf::AttrMap attrs;
//   attrs["transpose_a"] = true;
//   attrs["T"] = pf::DT_FLOAT;
//   bool ta = std::get<bool>(attrs.at("transpose_a"));
#pragma once

#include <map>
#include <string>
#include <variant>
#include <vector>

#include "placeflow/core/dtype.h"
#include "placeflow/core/shape.h"
#include "placeflow/core/tensor.h"

namespace pf {

using AttrValue = std::variant<bool, int64_t, float, std::string, DType, Shape,
                               std::vector<int64_t>, std::vector<std::string>, Tensor>;
using AttrMap = std::map<std::string, AttrValue, std::less<>>;

std::string AttrValueToString(const AttrValue& v);

}  // namespace pf
