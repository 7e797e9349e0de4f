// What a while loop's gradient needs to know of the conds in its body (train/while_gradients.cc):
// ops::Cond records each cond it builds, and Merge's gradient records the Switch it builds for
// each Merge (the backward cond). Internal to the control-flow ops and the gradients.
#pragma once

#include <deque>
#include <map>
#include <set>

#include "placeflow/ops/control_flow.h"

namespace pf::ops::internal {

struct CondInfo {
  Node* pivot_t = nullptr;  // Identity of the predicate's true output: live iff true was taken
  Node* pivot_f = nullptr;
  int first_id = 0, last_id = 0;  // the ids of the nodes its builder made
  // The ids of each branch's nodes (the Switches of values brought in included).
  int true_first = 0, true_last = -1, false_first = 0, false_last = -1;
  std::set<const Node*> switches;  // the predicate's Switch and those of values brought in
  std::vector<Node*> merges;
  bool Contains(const Node* n) const { return n->id() >= first_id && n->id() <= last_id; }
  Node* pivot(bool side) const { return side ? pivot_t : pivot_f; }
};

// Where a tensor lives in a cond: the cond and the branch (true or false).
struct Branch {
  const CondInfo* cond = nullptr;  // null: in no cond
  bool side = false;
};

// The conds built in `g`, in the order they were built.
std::deque<CondInfo>& Conds(Graph* g);
// The innermost cond among `conds` whose branch `x` is in (a Switch's output is in the branch
// it goes to; the cond's Merges are outside it).
Branch BranchOf(const std::vector<const CondInfo*>& conds, const Output& x);
// Per Merge of a cond, the Switch its gradient made (the backward cond), the latest one.
std::map<const Node*, SwitchOutputs>& CondGradSwitches(Graph* g);

}  // namespace pf::ops::internal
