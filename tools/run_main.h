// The tools' main(): runs Main and turns any exception into one line on stderr and status 1
// (nothing but a message and an exit status leaves a tool).
//
//   int main(int argc, char** argv) { return pf::tools::RunMain("pf-data", Main, argc, argv); }
#pragma once

#include <cstdio>
#include <exception>
#include <new>

namespace pf::tools {

template <typename MainFn>
int RunMain(const char* tool, MainFn main_fn, int argc, char** argv) {
  try {
    return main_fn(argc, argv);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "%s: out of memory (std::bad_alloc)\n", tool);
  } catch (const std::exception& e) {  // pf::Error included
    std::fprintf(stderr, "%s: %s\n", tool, e.what());
  } catch (...) {
    std::fprintf(stderr, "%s: unknown exception\n", tool);
  }
  return 1;
}

}  // namespace pf::tools
