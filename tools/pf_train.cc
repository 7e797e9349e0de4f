// pf-train: builds a model, replicates it as towers over the devices present, places it and
// trains it, printing progress. The program is tools/train_app.h's Main (the pf_app library).
//
//   pf-train --model mlp_seed000 --steps 100 --log-device-placement   # towers on every device
//   pf-train --towers 4 --devices cpu --aggregation allreduce
//   pf-train --model mlp_seed000 --steps 1000 --towers-table 1,2        # seed 000's experiment
//   pf-train --model mnist_mlp --data ../shared/data/mnist --epochs 5 --checkpoint ckpt
//   pf-train --model mnist_mlp --checkpoint ckpt --restore --epochs 10   # continues exactly
//   pf-train --model mnist_mlp --logdir runs/a --cpu-devices 2            # then: tensorboard
//
// Ctrl-C (SIGINT) finishes the step in progress, saves a checkpoint when --checkpoint is set,
// flushes the summaries and exits with status 130; a second Ctrl-C kills at once.
#include "tools/run_main.h"
#include "tools/train_app.h"

// Anything thrown ends the run with a message and status 1, never an abort: a pf::Error names
// the node, op and device; anything else (std::filesystem, std::system_error, bad_alloc) gets
// its what().
int main(int argc, char** argv) {
  return pf::tools::RunMain("pf-train", pf::app::Main, argc, argv);
}
