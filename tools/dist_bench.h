// pf-bench's cluster figures. Each starts pf-server processes (from pf-bench's own folder) on
// free loopback ports and times a client session with a grpc:// target:
//   grpc_recv_bandwidth    GB/s of a 64 MiB variable on worker:0 pulled by worker:1 (RecvTensor)
//   dist_step_overhead     us per step of a trivial graph spanning two tasks
//   dist_mlp_seed000_step  the seed MLP's SGD step with variables on ps:0 and compute on
//                          worker:0, against the same step in one process
//   allreduce_bandwidth    GB/s of an all-reduce of 64 MiB per task across 2 and 3 worker
//                          tasks, against one 64 MiB loopback copy between two tasks
#pragma once

namespace pf::bench {

void GrpcRecvBandwidth();
void DistStepOverhead();
void DistMlpSeed000Step();
void AllreduceBandwidth();

}  // namespace pf::bench
