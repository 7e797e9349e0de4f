#include "placeflow/graph/attr.h"

#include <fmt/ranges.h>

namespace pf {

std::string AttrValueToString(const AttrValue& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>)
          return x ? "true" : "false";
        else if constexpr (std::is_same_v<T, std::string>)
          return "\"" + x + "\"";
        else if constexpr (std::is_same_v<T, DType>)
          return std::string(DTypeName(x));
        else if constexpr (std::is_same_v<T, Shape>)
          return x.ToString();
        else if constexpr (std::is_same_v<T, Tensor>)
          return x.DebugString(6);
        else if constexpr (std::is_same_v<T, std::vector<std::string>>)
          return fmt::format("[{}]", fmt::join(x, ", "));
        else
          return fmt::format("{}", x);
      },
      v);
}

}  // namespace pf
