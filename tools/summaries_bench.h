// pf-bench's summaries_overhead figure (tools/summaries_bench.cc; a "skipped" line without
// protobuf).
#pragma once

namespace pf::bench {

void SummariesOverhead();

}  // namespace pf::bench
