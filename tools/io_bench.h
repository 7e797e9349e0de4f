// pf-bench figures of the io/ layer (TFRecord files).
#pragma once

namespace pf::bench {

// crc32c GB_per_s=: CRC32C throughput of the implementation the library uses (ISA-L when built
// with it) next to the SSE4.2 one-stream fallback, over 64 MiB.
void Crc32cFigure();

}  // namespace pf::bench
