// LocalRendezvous: the in-process Rendezvous (graph/rendezvous.h) of one step. Keys are
// matched in a map; a Recv that comes first leaves its callback, the Send runs it. Each key is
// sent once and received once a step, and the rendezvous lets go of the value when it is
// received (a cross-device tensor is freed with its last reader, not at the step's end).
//
//   pf::LocalRendezvous r;
//   r.RecvAsync(key, [](const pf::Status& s, const pf::Tensor& t) { ... });
//   r.Send(key, tensor);   // runs the callback on this thread
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "placeflow/graph/rendezvous.h"

namespace pf {

class LocalRendezvous : public Rendezvous {
 public:
  Status Send(const std::string& key, const Tensor& value) override;
  void RecvAsync(const std::string& key, DoneCallback done) override;
  void StartAbort(const Status& status) override;

 private:
  struct Item {
    bool sent = false, received = false;
    Tensor value;  // sent and not yet received
    std::vector<DoneCallback> waiters;
  };
  std::mutex mu_;
  std::map<std::string, Item> items_;
  Status aborted_;
};

}  // namespace pf
