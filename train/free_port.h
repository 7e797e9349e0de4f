// A free TCP port on the loopback interface, for local clusters (a ClusterSpec of
// "127.0.0.1:<port>" tasks: pf-train --local-cluster, tests, benchmarks).
//
//   int port = pf::train::FreeLoopbackPort();
//   pf::Server ps(pf::ClusterSpec::Parse("ps=127.0.0.1:" + std::to_string(port)).ValueOrThrow(),
//                 "ps", 0);
#pragma once

namespace pf::train {

// The port the kernel picks for a socket bound to 127.0.0.1:0, released at once. Another process
// could take it before the caller binds it; a server then fails with an error naming the
// address. Throws pf::Error (Unavailable) when no socket can be bound.
int FreeLoopbackPort();

}  // namespace pf::train
