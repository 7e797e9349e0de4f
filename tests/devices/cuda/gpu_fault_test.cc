// A GPU fault injected on purpose (a test kernel writing out of bounds) must come back as an
// error from Session::Run, never as a hang. The kernel is this test's own, so its program
// (pf_gpu_tests) links the CUDA backend; skipped (ctest code 4) without a GPU.
#include "placeflow/ops/gpu/gpu_kernel.h"
#include "tests/testing/test_util.h"

namespace pf::testing {
void LaunchOutOfBoundsWrite(void* stream, float* base);  // gpu_fault_kernel.cu
}

namespace pf {
namespace {

class FaultGpuOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    testing::LaunchOutOfBoundsWrite(gpu->compute_stream(), out->data<float>());
    return Status::OK();
  }
};
PF_REGISTER_OP(OpDef("TestGpuFault")
                   .Input("x", "T")
                   .Output("y", "T")
                   .TypeAttr("T", {DT_FLOAT})
                   .SetStateful()
                   .SetNotDifferentiable()
                   .SetShapeFn([](ShapeContext& c) {
                     c.set_output(0, c.input(0));
                     return Status::OK();
                   }));
PF_REGISTER_KERNEL(KernelDef("TestGpuFault", kDeviceGpu), FaultGpuOp);

// Runs alone (ctest gpu_fault_is_an_error): the fault loses this process's CUDA context.
TEST_CASE("A GPU fault comes back as an error from Run, not a hang", "[gpu_fault][.]") {
  PF_REQUIRE_GPU();
  Graph g;
  Scope root = Scope::Root(&g);
  Scope gpu = root.WithDevice("/gpu:0");
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {4});
  Output fault(NodeBuilder(gpu.WithOpName("fault"), "TestGpuFault").Input(x).Finalize(), 0);
  Output y = ops::Neg(gpu.WithOpName("after_fault"), fault);
  Session sess(g);
  std::vector<Tensor> out;
  Status s = sess.TryRun({{x, Tensor(DT_FLOAT, {4})}}, {y}, {}, &out);
  REQUIRE_FALSE(s.ok());
  INFO(s.message());
  CHECK_THAT(s.message(), Catch::Contains("illegal memory access") ||
                              Catch::Contains("unspecified launch failure"));
  CHECK_THAT(s.message(), Catch::Contains("context is lost"));
  // The next step reports the lost device instead of hanging.
  s = sess.TryRun({{x, Tensor(DT_FLOAT, {4})}}, {y}, {}, &out);
  REQUIRE_FALSE(s.ok());
  CHECK_THAT(s.message(), Catch::Contains("context is lost"));
}

}  // namespace
}  // namespace pf
