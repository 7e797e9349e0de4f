#include "placeflow/placer/partition.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <deque>

#include "placeflow/graph/kernel.h"
#include "placeflow/graph/op_registry.h"

namespace pf {
namespace {

const OpDef& Def(const char* op) { return *OpRegistry::Global()->Find(op); }

// The inputs `n`'s op declares (a list argument counts its length attr), or -1 when a length
// attr is missing.
int DeclaredInputs(const Node& n) {
  int count = 0;
  for (const ArgDef& arg : n.op_def().inputs()) {
    if (arg.number_attr.empty()) {
      ++count;
    } else if (auto it = n.attrs().find(arg.number_attr);
               it != n.attrs().end() && std::holds_alternative<int64_t>(it->second)) {
      count += static_cast<int>(std::get<int64_t>(it->second));
    } else {
      return -1;
    }
  }
  return count;
}

class Partitioner {
 public:
  Partitioner(const std::unordered_map<const Node*, Device*>& device, const std::set<Output>& fed)
      : device_(device), fed_(fed) {}

  Status Run(const std::vector<Node*>& nodes) {
    std::vector<const Node*> order;
    PF_RETURN_IF_ERROR(TopologicalOrder(nodes, &order));
    for (const Node* n : order) PF_RETURN_IF_ERROR(Copy(n));
    PF_RETURN_IF_ERROR(CloseBackEdges());
    return AddControlLoops();
  }
  Partitions result;

 private:
  // A while loop's back edge (NextIteration -> Merge): left out of the order, copied last.
  static bool IsBackEdge(const Output& src) {
    return src.node->op_def().control_flow() == ControlFlowKind::kNextIteration;
  }
  Status CloseBackEdges() {
    for (const auto& [merge, k] : back_edges_) {
      const Output& in = merge->input(k);
      if (device_.at(in.node) != device_.at(merge)) {
        return errors::Unimplemented("While loop back edge '", in.name(), "' -> '", merge->name(),
                                     "' crosses devices (", device_.at(in.node)->name(), " -> ",
                                     device_.at(merge)->name(),
                                     "): place a NextIteration on its Merge's device");
      }
      PartFor(device_.at(merge))
          .graph->UpdateEdge(Output(result.copy_of.at(in.node), in.index), result.copy_of.at(merge),
                             k);
    }
    return Status::OK();
  }
  std::vector<std::pair<const Node*, int>> back_edges_;
  Status TopologicalOrder(const std::vector<Node*>& nodes, std::vector<const Node*>* order) {
    std::unordered_map<const Node*, int> pending;
    for (const Node* n : nodes) pending[n] = 0;
    for (const Node* n : nodes) {
      // A node built past NodeBuilder (Graph::AddNode checks nothing) with too few inputs: its
      // kernel would read inputs that do not exist.
      if (const int declared = DeclaredInputs(*n); declared > n->num_inputs()) {
        return errors::InvalidArgument("Incomplete graph, missing ", declared - n->num_inputs(),
                                       " inputs for ", n->name(), " (op '", n->op(), "' takes ",
                                       declared, " inputs, the node has ", n->num_inputs(), ")");
      }
      std::vector<std::string> missing;
      for (const Output& in : n->inputs()) {
        if (fed_.count(in) || IsBackEdge(in)) continue;
        if (!pending.count(in.node)) {
          missing.push_back(in.name());
          continue;
        }
        ++pending[n];
      }
      if (!missing.empty()) {
        // TensorFlow's text, then which inputs: neither fed nor among the nodes to partition.
        return errors::InvalidArgument(
            "Incomplete graph, missing ", missing.size(), " inputs for ", n->name(), " (", n->op(),
            ": ", fmt::format("{}", fmt::join(missing, ", ")), " neither fed nor in the subgraph)");
      }
      for (const Node* c : n->control_inputs()) {
        if (pending.count(c)) ++pending[n];
      }
    }
    std::deque<const Node*> ready;
    for (const Node* n : nodes) {
      if (pending[n] == 0) ready.push_back(n);
    }
    while (!ready.empty()) {
      const Node* n = ready.front();
      ready.pop_front();
      order->push_back(n);
      for (const Edge& e : n->out_edges()) {
        auto it = pending.find(e.dst);
        if (it == pending.end() || (!e.IsControl() && (fed_.count(Output(e.src, e.src_output)) ||
                                                       IsBackEdge(Output(e.src, e.src_output)))))
          continue;
        if (--it->second == 0) ready.push_back(e.dst);
      }
    }
    if (order->size() != nodes.size()) return errors::InvalidArgument("The graph has a cycle");
    return Status::OK();
  }

  Partitions::Part& PartFor(Device* d) {
    auto it = part_index_.find(d);
    if (it != part_index_.end()) return result.parts[it->second];
    part_index_[d] = result.parts.size();
    Partitions::Part p;
    p.device = d;
    p.graph = std::make_unique<Graph>();
    result.parts.push_back(std::move(p));
    return result.parts.back();
  }

  Node* AddNode(Partitions::Part& part, NodeSpec spec, bool runs) {
    spec.requested_device = part.device->name();
    Node* n = part.graph->AddNode(std::move(spec));
    n->set_assigned_device(part.device->name());
    if (runs) part.nodes.push_back(n);
    device_of_[n] = part.device;
    SetFrame(n);
    return n;
  }

  // The _Arg of `fed` on `part`, one per memory type: on a device with its own memory, a
  // HostMemory consumer and a device-memory consumer each need their own copy of the feed.
  Output ArgFor(Partitions::Part& part, const Output& fed, bool host_memory) {
    auto key = std::make_pair(fed, host_memory);
    auto it = args_.find({&part, key});
    if (it != args_.end()) return it->second;
    NodeSpec spec;
    spec.name =
        fmt::format("_arg/{}_{}{}", fed.node->name(), fed.index, host_memory ? "_host" : "");
    spec.op_def = &Def("_Arg");
    spec.attrs = {{"T", fed.dtype()}, {"shape", fed.shape()}};
    spec.output_dtypes = {fed.dtype()};
    spec.output_shapes = {fed.shape()};
    Output arg(AddNode(part, std::move(spec), /*runs=*/false), 0);
    part.args.emplace(fed, arg);
    args_[{&part, key}] = arg;
    return arg;
  }

  // The _Recv on `dst` of `src` (a copied output on another device, or on the same GPU when the
  // producer and the consumer disagree on memory type), made once per (tensor, device, memory).
  // `host_memory`: the consumer reads it in host memory. The copy's source memory is the
  // tensor's own (CopyRegistry looks at the buffer), so a HostMemory output is copied from the
  // host whichever device made it.
  Output RecvFor(Device* dst, const Output& src_copy, const std::string& user_tensor, Device* src,
                 bool host_memory = false) {
    const std::string tensor_name = host_memory ? user_tensor + ";host" : user_tensor;
    auto key = std::make_pair(tensor_name, dst);
    auto it = recvs_.find(key);
    if (it != recvs_.end()) return it->second;
    // Named after the destination: its local name, qualified by its task when the tensor
    // leaves its task (two tasks' CPU:0 must not share a name).
    const DeviceName& to = dst->parsed_name();
    const DeviceName& from = src->parsed_name();
    std::string local = to.LocalName() + (host_memory ? "_host" : "");
    if (to.job != from.job || to.task != from.task)
      local = fmt::format("{}_{}_{}", to.job, to.task, local);
    NodeSpec send;
    send.name = fmt::format("{}/_send_to_{}", user_tensor, local);
    send.op_def = &Def("_Send");
    // The sender's incarnation goes into the rendezvous key (graph/rendezvous.h).
    const auto incarnation = static_cast<int64_t>(src->incarnation());
    send.attrs = {{"T", src_copy.dtype()},
                  {"tensor_name", tensor_name},
                  {"send_device", src->name()},
                  {"send_device_incarnation", incarnation},
                  {"recv_device", dst->name()}};
    send.inputs = {src_copy};
    Node* send_node = AddNode(PartFor(src), std::move(send), true);
    NodeSpec recv;
    recv.name = fmt::format("{}/_recv_on_{}", user_tensor, local);
    recv.op_def = &Def("_Recv");
    recv.attrs = {{"tensor_type", src_copy.dtype()},
                  {"tensor_name", tensor_name},
                  {"send_device", src->name()},
                  {"recv_device", dst->name()},
                  {"shape", src_copy.shape()},
                  {"host_memory", host_memory},
                  {"send_device_incarnation", incarnation}};
    recv.output_dtypes = {src_copy.dtype()};
    recv.output_shapes = {src_copy.shape()};
    Output out(AddNode(PartFor(dst), std::move(recv), true), 0);
    // A value of a loop iteration crosses in that iteration: the _Recv is in the loop too.
    frame_[out.node] = frame_.at(send_node);
    if (!frame_[out.node].empty()) loop_transfers_.push_back({send_node, out.node});
    if (src_copy.node->op_def().control_flow() == ControlFlowKind::kExit)
      exit_recvs_.push_back({src_copy.node, out.node});
    recvs_[key] = out;
    ++result.send_recv_pairs;
    return out;
  }

  Status Copy(const Node* n) {
    auto dev = device_.find(n);
    if (dev == device_.end()) return errors::Internal("Node '", n->name(), "' has no device");
    Device* d = dev->second;
    PartFor(d);  // parts are created in topological order of their first node
    NodeSpec spec;
    spec.name = n->name();
    spec.op_def = &n->op_def();
    spec.attrs = n->attrs();
    spec.output_dtypes.resize(n->num_outputs());
    spec.output_shapes.resize(n->num_outputs());
    for (int o = 0; o < n->num_outputs(); ++o) {
      spec.output_dtypes[o] = n->output_dtype(o);
      spec.output_shapes[o] = n->output_shape(o);
    }
    spec.colocation = n->colocation_group();
    // Memory types matter on devices with their own memory: a HostMemory input (a GPU kernel's
    // shape argument) takes its value in host memory, through a _Recv even on the same device.
    // A HostMemory output (a GPU Shape) feeding a device-memory input on the same GPU needs a
    // copy too: wire directly only when the memory types agree.
    std::vector<bool> host_in;
    if (!d->uses_host_memory()) HostMemoryOf(*n, d, &host_in, nullptr);
    for (int k = 0; k < n->num_inputs(); ++k) {
      const Output& in = n->input(k);
      const bool wants_host = !host_in.empty() && host_in[k];
      if (IsBackEdge(in) && !fed_.count(in) && !result.copy_of.count(in.node)) {
        if (spec.inputs.empty()) {
          return errors::InvalidArgument("Node '", n->name(), "' (", n->op(),
                                         ") takes a loop's back edge '", in.name(),
                                         "' as its first input: a Merge takes it after the Enter");
        }
        back_edges_.push_back({n, k});  // closed once its NextIteration is copied
        spec.inputs.push_back(spec.inputs[0]);
        continue;
      }
      if (fed_.count(in)) {
        spec.inputs.push_back(ArgFor(PartFor(d), in, wants_host));
        continue;
      }
      Output src_copy(result.copy_of.at(in.node), in.index);
      Device* src_dev = device_.at(in.node);
      if (src_dev == d && (d->uses_host_memory() || wants_host == SourceInHostMemory(in, d))) {
        spec.inputs.push_back(src_copy);
      } else {
        spec.inputs.push_back(RecvFor(d, src_copy, in.name(), src_dev, wants_host));
      }
    }
    // Cross-device control edges, grouped by the source's device: all of `n`'s sources on one
    // device send one token together (one _Send/_Recv pair, not one per source).
    std::map<Device*, std::vector<const Node*>> remote;
    for (const Node* c : n->control_inputs()) {
      auto it = result.copy_of.find(c);
      if (it == result.copy_of.end()) continue;  // pruned away
      Device* src_dev = device_.at(c);
      if (src_dev == d) {
        spec.control_inputs.push_back(it->second);
      } else {
        remote[src_dev].push_back(c);
      }
    }
    for (const auto& [src_dev, sources] : remote)
      spec.control_inputs.push_back(ControlRecvFor(n, d, src_dev, sources));
    result.copy_of[n] = AddNode(PartFor(d), std::move(spec), true);
    return Status::OK();
  }

  // A cross-device control edge, as TensorFlow partitions it: a constant made after the
  // sources is sent; on `d` its _Recv feeds an Identity, the local source of the control edge
  // (the _Recv has a data consumer). One per (set of sources, destination device). TensorFlow
  // sends one token per source; a train op grouping N updates on another device then waits
  // for N round trips, so the sources on one device share a token here.
  Node* ControlRecvFor(const Node* n, Device* d, Device* src_dev,
                       std::vector<const Node*> sources) {
    std::sort(sources.begin(), sources.end(),
              [](const Node* a, const Node* b) { return a->id() < b->id(); });
    auto cached = control_recvs_.find({sources, d});
    if (cached != control_recvs_.end()) return cached->second;
    Partitions::Part& src_part = PartFor(src_dev);
    // A shared token is named after its destination node and its device ("train/
    // _control_token_from_CPU_1", with the job, replica and task when it leaves its task).
    const DeviceName& from = src_dev->parsed_name();
    std::string from_name = fmt::format("{}_{}", from.type, from.id);
    const DeviceName& to = d->parsed_name();
    if (from.job != to.job || from.replica != to.replica || from.task != to.task)
      from_name = fmt::format("{}_{}_{}_{}", from.job, from.replica, from.task, from_name);
    const std::string token_name =
        sources.size() == 1 ? fmt::format("{}/_control_token", sources[0]->name())
                            : fmt::format("{}/_control_token_from_{}", n->name(), from_name);
    Node* token = src_part.graph->FindNode(token_name);
    if (token == nullptr) {
      NodeSpec spec;
      spec.name = token_name;
      spec.op_def = &Def("Const");
      spec.attrs = {{"value", Tensor::Scalar<bool>(true)}, {"dtype", DT_BOOL}};
      spec.output_dtypes = {DT_BOOL};
      spec.output_shapes = {Shape{}};
      for (const Node* c : sources) spec.control_inputs.push_back(result.copy_of.at(c));
      token = AddNode(src_part, std::move(spec), true);
    }
    Output recv = RecvFor(d, Output(token, 0), token_name + ":0", src_dev);
    NodeSpec identity;
    identity.name = recv.node->name() + "/Identity";
    identity.op_def = &Def("Identity");
    identity.attrs = {{"T", DT_BOOL}};
    identity.inputs = {recv};
    identity.output_dtypes = {DT_BOOL};
    identity.output_shapes = {Shape{}};
    Node* local = AddNode(PartFor(d), std::move(identity), true);
    control_recvs_.emplace(std::make_pair(std::move(sources), d), local);
    ++result.control_tokens;
    return local;
  }

  // Frames (while loops) of the partitions' nodes, found as the executor finds them
  // (executor/frames.h): an Enter's outputs are in the frame it names, an Exit's in its frame's
  // parent, every other node's in its first input's frame.
  std::string OutFrame(const Node* n) const {
    const std::string& own = frame_.at(n);
    switch (n->op_def().control_flow()) {
      case ControlFlowKind::kEnter:
        return n->attr<std::string>("frame_name");
      case ControlFlowKind::kExit: {
        auto parent = parent_.find(own);
        return parent == parent_.end() ? std::string() : parent->second;
      }
      default:
        return own;
    }
  }
  void SetFrame(Node* n) {
    std::string frame;
    if (n->num_inputs() > 0) {
      frame = OutFrame(n->input(0).node);
    } else if (!n->control_inputs().empty()) {
      frame = OutFrame(n->control_inputs()[0]);
    }
    const ControlFlowKind kind = n->op_def().control_flow();
    if (kind == ControlFlowKind::kEnter) {
      const auto& child = n->attr<std::string>("frame_name");
      parent_.emplace(child, frame);
      int& p = parallel_iterations_[child];
      p = std::max<int>(p, static_cast<int>(n->attr<int64_t>("parallel_iterations")));
    } else if (kind == ControlFlowKind::kLoopCond) {
      loop_cond_.emplace(frame, n);
    }
    frame_[n] = std::move(frame);
  }

  // A while loop whose nodes are on several devices, as TensorFlow partitions it: each device
  // that sends or receives a tensor of an iteration gets a control loop of its own (Enter,
  // Merge, Switch on the loop's predicate received from the LoopCond's device, NextIteration),
  // whose Merge starts each iteration there; every _Recv in the loop waits for its device's
  // Merge, so that it runs once per iteration, the last one (the predicate false) included
  // (docs/control_flow.md).
  Status AddControlLoops() {
    const auto transfers = loop_transfers_;
    // A non-constant Enter's value exists in iteration 0 only: a _Recv of it in later
    // iterations would wait for ever.
    for (const auto& [send, recv] : transfers) {
      const Node* src = send->input(0).node;
      if (src->op_def().control_flow() == ControlFlowKind::kEnter &&
          !src->attr<bool>("is_constant")) {
        return errors::Unimplemented("Enter node '", src->name(), "' of while loop '",
                                     frame_.at(recv), "' (on ", device_of_.at(src)->name(),
                                     ") feeds a consumer on ", device_of_.at(recv)->name(),
                                     ": put a loop variable's Enter on its Merge's device");
      }
    }
    std::set<std::pair<std::string, Device*>> loops;
    for (const auto& [send, recv] : transfers) {
      loops.insert({frame_.at(recv), device_of_.at(recv)});
      // A device that only sends (a constant Enter's value, each iteration) needs the
      // iterations too, unless it is the one running the loop.
      const std::string& frame = frame_.at(send);
      auto cond = loop_cond_.find(frame);
      if (cond == loop_cond_.end() || device_of_.at(cond->second) != device_of_.at(send))
        loops.insert({frame, device_of_.at(send)});
    }
    for (const auto& [frame, d] : loops) PF_RETURN_IF_ERROR(ControlLoop(frame, d).status());
    for (const auto& [send, recv] : transfers) {
      if (predicate_recvs_.count(recv)) continue;
      PF_ASSIGN_OR_RETURN(Node * merge, ControlLoop(frame_.at(recv), device_of_.at(recv)));
      PartFor(device_of_.at(recv)).graph->AddControlEdge(merge, const_cast<Node*>(recv));
    }
    // A loop's result reaches another device that ran part of the loop only once that part is
    // over: what is done with it (a variable's update) cannot race with the loop's last reads.
    for (const auto& [exit, recv] : exit_recvs_) {
      auto done = control_loop_exits_.find({frame_.at(exit), device_of_.at(recv)});
      if (done != control_loop_exits_.end())
        PartFor(device_of_.at(recv)).graph->AddControlEdge(done->second, const_cast<Node*>(recv));
    }
    return Status::OK();
  }
  // The Merge of `frame`'s control loop on `d`, made with the control loops of the frames
  // around it.
  StatusOr<Node*> ControlLoop(const std::string& frame, Device* d) {
    auto cached = control_loops_.find({frame, d});
    if (cached != control_loops_.end()) return cached->second;
    auto cond = loop_cond_.find(frame);
    if (cond == loop_cond_.end()) {
      return errors::InvalidArgument("While loop '", frame, "' spans devices (", d->name(),
                                     " among them) but has no LoopCond node");
    }
    Partitions::Part& part = PartFor(d);
    const std::string prefix = fmt::format("{}/_control_loop", frame);
    auto add = [&](const std::string& name, const char* op, std::vector<Output> inputs,
                   AttrMap attrs) {
      NodeSpec spec;
      spec.name = prefix + "/" + name;
      spec.op_def = &Def(op);
      spec.attrs = std::move(attrs);
      spec.inputs = std::move(inputs);
      for (size_t o = 0; o < spec.op_def->outputs().size(); ++o) {
        spec.output_dtypes.push_back(o == 1 && name == "merge" ? DT_INT32 : DT_BOOL);
        spec.output_shapes.push_back(Shape{});
      }
      return AddNode(part, std::move(spec), true);
    };
    const AttrMap bool_t = {{"T", DT_BOOL}};
    Node* start =
        add("start", "Const", {}, {{"value", Tensor::Scalar<bool>(true)}, {"dtype", DT_BOOL}});
    if (auto parent = parent_.find(frame); parent != parent_.end() && !parent->second.empty()) {
      // Once per iteration of the loop around it.
      PF_ASSIGN_OR_RETURN(Node * outer, ControlLoop(parent->second, d));
      part.graph->AddControlEdge(outer, start);
      frame_[start] = parent->second;
    }
    Node* enter = add("enter", "Enter", {Output(start, 0)},
                      {{"T", DT_BOOL},
                       {"frame_name", frame},
                       {"is_constant", false},
                       {"parallel_iterations", int64_t{parallel_iterations_[frame]}}});
    Node* merge = add("merge", "Merge", {Output(enter, 0), Output(enter, 0)},
                      {{"T", DT_BOOL}, {"N", int64_t{2}}});
    Node* loop_cond = cond->second;
    Device* cond_device = device_of_.at(loop_cond);
    Output pred(loop_cond, 0);
    if (cond_device != d) {
      pred = RecvFor(d, pred, loop_cond->name() + ":0", cond_device, !d->uses_host_memory());
      part.graph->AddControlEdge(merge, pred.node);
      predicate_recvs_.insert(pred.node);
    }
    Node* sw = add("switch", "Switch", {Output(merge, 0), pred}, bool_t);
    Node* next = add("next_iteration", "NextIteration", {Output(sw, 1)}, bool_t);
    part.graph->UpdateEdge(Output(next, 0), merge, 1);
    control_loops_[{frame, d}] = merge;
    control_loop_exits_[{frame, d}] = add("exit", "Exit", {Output(sw, 0)}, bool_t);
    return merge;
  }

  static void HostMemoryOf(const Node& n, Device* d, std::vector<bool>* in,
                           std::vector<bool>* out) {
    std::vector<bool> unused;
    KernelRegistry::Global()->MemoryTypes(n, d->device_type(), in, out ? out : &unused);
  }
  static bool SourceInHostMemory(const Output& o, Device* d) {
    if (d->uses_host_memory()) return true;
    std::vector<bool> in, out;
    HostMemoryOf(*o.node, d, &in, &out);
    return out[o.index];
  }

  const std::unordered_map<const Node*, Device*>& device_;
  const std::set<Output>& fed_;
  std::map<Device*, size_t> part_index_;
  std::map<std::pair<std::string, Device*>, Output> recvs_;
  std::map<std::pair<std::vector<const Node*>, Device*>, Node*> control_recvs_;  // Identity
  std::map<std::pair<const Partitions::Part*, std::pair<Output, bool>>, Output> args_;
  // Control flow: each partition node's frame ("" outside any loop), each frame's parent,
  // LoopCond and parallel_iterations, the _Send/_Recv pairs inside loops, the control loops.
  std::unordered_map<const Node*, Device*> device_of_;
  std::unordered_map<const Node*, std::string> frame_;
  std::map<std::string, std::string> parent_;
  std::map<std::string, Node*> loop_cond_;
  std::map<std::string, int> parallel_iterations_;
  std::vector<std::pair<const Node*, const Node*>> loop_transfers_;
  std::set<const Node*> predicate_recvs_;
  std::map<std::pair<std::string, Device*>, Node*> control_loops_;  // their Merges
  std::map<std::pair<std::string, Device*>, Node*> control_loop_exits_;
  std::vector<std::pair<const Node*, const Node*>> exit_recvs_;  // an Exit's value received
};

}  // namespace

StatusOr<Partitions> Partition(const std::vector<Node*>& nodes,
                               const std::unordered_map<const Node*, Device*>& device,
                               const std::set<Output>& fed) {
  Partitioner p(device, fed);
  PF_RETURN_IF_ERROR(p.Run(nodes));
  return std::move(p.result);
}

}  // namespace pf
