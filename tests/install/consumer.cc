#include <placeflow/placeflow.h>

#include <cstdio>

int main() {
  pf::Graph g;
  pf::Scope root = pf::Scope::Root(&g);
  pf::Output x = pf::ops::Placeholder(root.WithOpName("x"), pf::DT_FLOAT, {-1, 2});
  pf::Output y = pf::ops::Sum(root, pf::ops::Square(root, x));
  pf::Session sess(g);
  float v =
      sess.Run({{x, pf::Tensor::FromVector<float>({1, 2, 3, 4}, {2, 2})}}, {y})[0].scalar<float>();
  std::printf("sum of squares = %g\n", v);
  return v == 30.f ? 0 : 1;
}
