// Waiting for a cluster's variables (TensorFlow's SessionManager.wait_for_session): a non-chief
// worker waits until the chief has initialised every variable; any worker whose step failed
// because a ps task restarted waits until the ps answers again and its variables are back (the
// chief brings them back itself: the latest checkpoint, else the initialisers).
//
//   pf::ThrowIfError(pf::train::WaitForChief(sess, &g, /*worker_index=*/1, /*timeout_s=*/120));
//
// MonitoredTrainingSession's session creators (train/monitored_session.h) use these; a program
// with its own loop can call them directly.
#pragma once

#include <functional>
#include <string>

#include "placeflow/core/status.h"
#include "placeflow/executor/session.h"

namespace pf::train {

// What a task that is down, or back after a restart, answers: Unavailable, Aborted, Cancelled,
// DeadlineExceeded, or a restart of the task (IsTaskRestart). Worth waiting on.
bool IsTaskComingBack(const Status& s);
// A failed step worth recovering from: a task coming back, or an uninitialised variable (the
// restarted ps lost its variables).
bool IsRecoverableError(const Status& s);

struct WaitOptions {
  double timeout_s = 120;
  double poll_interval_s = 0.3;
  // In the progress lines: "waiting for <waiting_for>: <reason>".
  std::string waiting_for = "the variables";
  // The chief's: brings back variables a restarted ps lost (called when a read finds one
  // uninitialised). Null: only wait.
  std::function<void()> restore;
  // Receives each new reason to wait (once per reason); null: spdlog's info log.
  std::function<void(const std::string&)> log;
};

// Reads every global variable of `graph` until all of them read (OK), an error comes that is
// neither a task coming back nor an uninitialised value (returned), or `timeout_s` passes
// (DeadlineExceeded "waited <t> s; last: <reason>").
Status WaitForVariables(Session& session, Graph* graph, const WaitOptions& options);

// A non-chief worker's start-up: WaitForVariables; on timeout DeadlineExceeded "Worker <i> waited
// for the chief (worker 0) to initialise the variables: waited <t> s; last: ...".
Status WaitForChief(Session& session, Graph* graph, int worker_index, double timeout_s = 120,
                    std::function<void(const std::string&)> log = nullptr);

}  // namespace pf::train
