// The safetensors reader against headers whose dims do not fit int64, or whose byte count
// wraps around: each is a corrupt checkpoint, never a tensor that disagrees with its buffer.
#include <filesystem>
#include <fstream>

#include "tests/testing/test_util.h"

namespace pf::safetensors_reader_test {
namespace {

using Catch::Matchers::Contains;

std::string WriteFile(const std::string& name, const std::string& header, const std::string& data) {
  auto path = std::filesystem::temp_directory_path() /
              fmt::format("pf_safetensors_{}_{}.safetensors", name, getpid());
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  std::ofstream(path, std::ios::binary) << bytes << header << data;
  return path.string();
}

std::string Header(const std::string& shape, const std::string& offsets) {
  return fmt::format(R"({{"t":{{"dtype":"F32","shape":[{}],"data_offsets":[{}]}}}})", shape,
                     offsets);
}

TEST_CASE("Safetensors headers whose sizes overflow are rejected", "[saver][robust]") {
  // 2^32 * 2^32 elements wraps to 0 in 64 bits: an empty range would have matched.
  auto wrapped =
      ReadSafetensors(WriteFile("wrap", Header("4294967296,4294967296,3", "0,0"), std::string()));
  REQUIRE_FALSE(wrapped.ok());
  CHECK_THAT(wrapped.status().message(),
             Contains("Corrupt checkpoint") &&
                 Contains("tensor 't' of shape [4294967296,4294967296,3] has more than "
                          "9223372036854775807 elements"));
  // 2^62 floats is 2^64 bytes, which wraps to 0: an empty range must not match.
  auto bytes =
      ReadSafetensors(WriteFile("bytes", Header("2147483648,2147483648", "0,0"), std::string()));
  REQUIRE_FALSE(bytes.ok());
  CHECK_THAT(bytes.status().message(),
             Contains("tensor 't' of shape [2147483648,2147483648] needs more than "
                      "18446744073709551615 bytes"));
  // Dims that are fine but disagree with the range.
  auto mismatch =
      ReadSafetensors(WriteFile("mismatch", Header("2,3", "0,16"), std::string(16, '\0')));
  REQUIRE_FALSE(mismatch.ok());
  CHECK_THAT(mismatch.status().message(),
             Contains("tensor 't' of shape [2,3] needs 24 bytes but its range holds 16"));
  // Nine dims: past the maximum rank.
  auto rank =
      ReadSafetensors(WriteFile("rank", Header("1,1,1,1,1,1,1,1,1", "0,4"), std::string(4, '\0')));
  REQUIRE_FALSE(rank.ok());
  CHECK_THAT(rank.status().message(), Contains("Rank 9 exceeds the maximum rank 8"));
  // And a good one still reads.
  auto good = ReadSafetensors(WriteFile("good", Header("2,2", "0,16"), std::string(16, '\0')));
  REQUIRE(good.ok());
  CHECK(good->at("t").shape() == Shape{2, 2});
}

}  // namespace
}  // namespace pf::safetensors_reader_test
