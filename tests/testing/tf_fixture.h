// TensorFlow-written GraphDef fixtures (tests/data/tf_graphdefs, made by
// tests/data/make_tf_graphdef_fixtures.py): import one, feed TF's feeds, check TF's fetched values
// (tests/data/tf_graphdefs/expected.json). Float, int32 and bool feeds; fetches of every dtype.
#ifndef PLACEFLOW_TESTS_TESTING_TF_FIXTURE_H_
#define PLACEFLOW_TESTS_TESTING_TF_FIXTURE_H_

#include <cmath>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "placeflow/graph/graph_def.h"
#include "tests/testing/json.h"
#include "tests/testing/test_util.h"

namespace pf::testing {

inline std::string FixturePath(const std::string& name) {
  return std::string(PF_SOURCE_DIR) + "/tests/data/tf_graphdefs/" + name;
}

inline const Json& Expected() {
  static const Json* j = new Json(ParseJsonFile(FixturePath("expected.json")));
  return *j;
}

inline Shape ShapeOf(const Json& j) {
  std::vector<int64_t> dims;
  for (const Json& d : j["shape"].array()) dims.push_back(static_cast<int64_t>(d.number()));
  return Shape::FromDims(dims).value();
}

inline Tensor FeedOf(const Json& j) {
  const std::string& dtype = j["dtype"].str();
  const auto& values = j["values"].array();
  Tensor t(dtype == "int32" ? DT_INT32 : dtype == "bool" ? DT_BOOL : DT_FLOAT, ShapeOf(j));
  for (size_t i = 0; i < values.size(); ++i) {
    if (t.dtype() == DT_INT32)
      t.flat<int32_t>()[i] = std::stoi(values[i].str());
    else if (t.dtype() == DT_BOOL)
      t.flat<bool>()[i] = values[i].number() != 0;
    else
      t.flat<float>()[i] = static_cast<float>(values[i].number());
  }
  return t;
}

inline std::string FromHex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return out;
}

// Half and bfloat16 bits to float (exact: every such value is a float).
inline double WideValue(const Tensor& t, size_t i) {
  const uint16_t bits = static_cast<const uint16_t*>(t.raw_data())[i];
  if (t.dtype() == DT_BFLOAT16) {
    uint32_t w = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &w, 4);
    return f;
  }
  const int exp = (bits >> 10) & 0x1f, mant = bits & 0x3ff;
  double v = exp == 0 ? std::ldexp(mant, -24) : std::ldexp(1024 + mant, exp - 25);
  return (bits & 0x8000) ? -v : v;
}

// Our value against TF's: floats within 1e-5 absolute + 1e-5 relative (float32 sums in another
// order), everything else exactly.
inline void CheckEqualsTf(const std::string& fetch, const Tensor& got, const Json& want) {
  INFO("fetch " << fetch << " got " << got.DebugString());
  REQUIRE(got.shape() == ShapeOf(want));
  const auto& values = want["values"].array();
  REQUIRE(static_cast<int64_t>(values.size()) == got.num_elements());
  for (size_t i = 0; i < values.size(); ++i) {
    INFO("element " << i);
    switch (got.dtype()) {
      case DT_FLOAT:
        CHECK(got.flat<float>()[i] == Approx(values[i].number()).margin(1e-5).epsilon(1e-5));
        break;
      case DT_DOUBLE:
        CHECK(got.flat<double>()[i] == values[i].number());
        break;
      case DT_HALF:
      case DT_BFLOAT16:
        CHECK(WideValue(got, i) == values[i].number());
        break;
      case DT_INT32:
        CHECK(got.flat<int32_t>()[i] == std::stoll(values[i].str()));
        break;
      case DT_INT64:
        CHECK(got.flat<int64_t>()[i] == std::stoll(values[i].str()));
        break;
      case DT_UINT8:
        CHECK(got.flat<uint8_t>()[i] == std::stoll(values[i].str()));
        break;
      case DT_BOOL:
        CHECK(got.flat<bool>()[i] == (values[i].number() != 0));
        break;
      case DT_STRING:
        CHECK(got.flat<std::string>()[i] == FromHex(values[i].str()));
        break;
      default:
        FAIL("unexpected dtype " << DTypeName(got.dtype()));
    }
  }
}

// Imports `name`.pb into `g`, runs its "init" and its fetches with TF's feeds in `sess`, checks
// TF's values; returns the ops TF's graph had.
inline std::set<std::string> CheckAgainstTf(const std::string& name, Graph* g,
                                            std::unique_ptr<Session>* sess) {
  const Json& e = Expected()[name];
  ImportGraphDef(FixturePath(name + ".pb"), g);
  *sess = std::make_unique<Session>(*g);
  if (!e["init"].str().empty()) (*sess)->RunNamed({}, {}, {e["init"].str()});
  std::vector<std::pair<std::string, Tensor>> feeds;
  for (const auto& [feed, value] : e["feeds"].object()) feeds.emplace_back(feed, FeedOf(value));
  std::vector<std::string> fetches;
  for (const auto& [fetch, value] : e["fetches"].object()) fetches.push_back(fetch);
  std::vector<Tensor> got = (*sess)->RunNamed(feeds, fetches);
  size_t k = 0;
  for (const auto& [fetch, value] : e["fetches"].object()) CheckEqualsTf(fetch, got[k++], value);
  std::set<std::string> ops;
  for (const Json& node : e["nodes"].array()) ops.insert(node.array()[1].str());
  return ops;
}

}  // namespace pf::testing

#endif  // PLACEFLOW_TESTS_TESTING_TF_FIXTURE_H_
