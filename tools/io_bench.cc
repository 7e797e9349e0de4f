#include "tools/io_bench.h"

#include <cstdio>
#include <cstring>
#include <random>
#include <string>

#include "placeflow/io/record_io.h"
#include "tools/bench_util.h"

namespace pf::bench {

void Crc32cFigure() {
  std::string data(64 << 20, '\0');
  std::mt19937_64 rng(1);
  for (size_t i = 0; i + 8 <= data.size(); i += 8) {
    const uint64_t v = rng();
    std::memcpy(data.data() + i, &v, 8);
  }
  uint32_t sink = 0;
  auto rate = [&](auto fn) {
    const double s = TimeMedian([&] { sink ^= fn(data); });
    return data.size() / s / 1e9;
  };
  const double lib = rate([](const std::string& d) { return pf::io::Crc32c(d); });
  const double sse = rate([](const std::string& d) { return pf::io::Crc32cSse42(d); });
  std::printf("crc32c GB_per_s=%.2f impl=%s sse42_GB_per_s=%.2f bytes=%zu repeats=%d check=%08x\n",
              lib, std::string(pf::io::Crc32cImplementation()).c_str(), sse, data.size(), kRepeats,
              sink);
}

}  // namespace pf::bench
