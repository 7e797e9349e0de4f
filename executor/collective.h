// LocalCollectiveTable: the in-process CollectiveTable (graph/collectives.h) of one step.
//
//   pf::LocalCollectiveTable table;
//   table.Join("grads", 2, {0, ctx0, done0}, complete);   // waits
//   table.Join("grads", 2, {1, ctx1, done1}, complete);   // runs complete, then done0 and done1
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "placeflow/graph/collectives.h"

namespace pf {

class LocalCollectiveTable : public CollectiveTable {
 public:
  void Join(const std::string& key, int group_size, Participant p,
            const CompleteFn& complete) override;
  void StartAbort(const Status& status) override;

 private:
  struct Group {
    int size = 0;
    std::vector<Participant> arrived;
  };
  std::mutex mu_;
  std::map<std::string, Group> groups_;
  Status aborted_;
};

}  // namespace pf
