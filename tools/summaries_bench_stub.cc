// summaries_overhead without protobuf (PF_WITH_PROTOBUF=OFF): no summaries to time.
#include <cstdio>

#include "tools/summaries_bench.h"

namespace pf::bench {

void SummariesOverhead() { std::printf("summaries_overhead skipped=no_protobuf\n"); }

}  // namespace pf::bench
