#include "placeflow/graph/kernel.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "placeflow/graph/op_registry.h"

namespace pf {

Allocator* OpKernelContext::OutputAllocator(int i) const {
  if (p_.kernel != nullptr && p_.kernel->host_output(i)) return CpuAllocator();
  return p_.allocator != nullptr ? p_.allocator : CpuAllocator();
}

StatusOr<Tensor*> OpKernelContext::AllocateOutput(int i) {
  Tensor& slot = p_.outputs[i];
  if (slot.IsInitialized()) return &slot;
  const Shape& shape = p_.output_shapes[i];
  if (!shape.IsFullyDefined()) {
    return errors::Internal("Cannot allocate output ", i,
                            p_.kernel != nullptr ? " of node '" + p_.kernel->name() + "'" : "",
                            ": its shape ", shape.ToString(), " is not fully defined");
  }
  PF_ASSIGN_OR_RETURN(slot, Tensor::Allocate(OutputAllocator(i), p_.output_dtypes[i], shape));
  return &slot;
}

StatusOr<Tensor*> OpKernelContext::ForwardInputOrAllocateOutput(
    std::initializer_list<int> candidates, int out) {
  Tensor& slot = p_.outputs[out];
  const Shape& shape = p_.output_shapes[out];
  if (slot.IsInitialized() || !shape.IsFullyDefined()) return AllocateOutput(out);
  for (int in : candidates) {
    const Tensor& t = p_.inputs[in];
    const std::shared_ptr<Buffer>& buffer = t.buffer();
    // use_count() == 1: this input is the only holder, so no other thread can take a reference
    // while we look. A view's buffer frees nothing (null allocator), so it never matches.
    if (ref_input(in) != nullptr || t.dtype() != p_.output_dtypes[out] ||
        !DTypeIsNumeric(t.dtype()) || t.num_elements() != shape.num_elements() ||
        buffer == nullptr || buffer.use_count() != 1 ||
        buffer->allocator() != OutputAllocator(out)) {
      continue;
    }
    slot = Tensor(t.dtype(), shape, buffer);
    return &slot;
  }
  return AllocateOutput(out);
}

namespace {

// A stateful op without inputs (_Recv, a variable) gets its value from outside the step's
// dataflow: from another device or task, or from state that Assign(validate_shape=false) may
// have reshaped. Its inferred shape is the graph's static declaration (unknown for a shapeless
// Placeholder's value), not a contract the shape function derived from real inputs, so only
// its dtype is checked; what it produces is checked where it was made, and its consumers run
// their shape functions over the shape that arrived (executor.cc, PrepareNode).
bool ShapeIsDeclaration(const OpKernel* kernel) {
  if (kernel == nullptr) return false;
  const Node& n = kernel->node();
  return n.num_inputs() == 0 && n.op_def().stateful();
}

}  // namespace

Status OpKernelContext::SetOutput(int i, Tensor t) {
  // Otherwise the inferred shape comes from the shape function over the real inputs: the
  // kernel must agree with it (design rule 2), dim for dim.
  const Shape& inferred = p_.output_shapes[i];
  const bool shape_ok = (t.shape().IsCompatibleWith(inferred) && t.rank() == inferred.rank()) ||
                        ShapeIsDeclaration(p_.kernel);  // asked only when the shapes differ
  if (t.dtype() != p_.output_dtypes[i] || !shape_ok) {
    return errors::Internal("Output ", i, " set to ", DTypeName(t.dtype()), " ",
                            t.shape().ToString(), " but the shape function inferred ",
                            DTypeName(p_.output_dtypes[i]), " ", p_.output_shapes[i].ToString());
  }
  p_.outputs[i] = std::move(t);
  return Status::OK();
}

Status OpKernelContext::ForwardInput(int in, int out) {
  if (input(in).shape() == p_.output_shapes[out]) return SetOutput(out, input(in));
  PF_ASSIGN_OR_RETURN(Tensor t, input(in).Reshaped(p_.output_shapes[out]));
  return SetOutput(out, std::move(t));
}

bool KernelDef::Matches(const AttrMap& attrs) const {
  for (const auto& [attr, allowed] : constraints_) {
    auto it = attrs.find(attr);
    if (it == attrs.end() || !std::holds_alternative<DType>(it->second)) return false;
    if (std::find(allowed.begin(), allowed.end(), std::get<DType>(it->second)) == allowed.end())
      return false;
  }
  return true;
}

std::string KernelDef::DebugString() const {
  std::string s = fmt::format("device='{}'", device_type_);
  for (const auto& [attr, allowed] : constraints_) {
    std::vector<std::string_view> names;
    for (DType t : allowed) names.push_back(DTypeName(t));
    s += fmt::format("; {} in [{}]", attr, fmt::join(names, ", "));
  }
  return s;
}

KernelRegistry* KernelRegistry::Global() {
  static KernelRegistry* r = new KernelRegistry();
  return r;
}

void KernelRegistry::Register(KernelDef def) {
  std::unique_lock lock(mu_);
  std::string op = def.op();
  kernels_.emplace(std::move(op), std::move(def));
}

void KernelRegistry::RegisterWithBackend(KernelDef def) {
  std::unique_lock lock(mu_);
  if (enabled_backends_.count(def.device_type()) > 0) {
    std::string op = def.op();
    kernels_.emplace(std::move(op), std::move(def));
  } else {
    waiting_for_backend_.push_back(std::move(def));
  }
}

void KernelRegistry::EnableBackend(std::string_view device_type) {
  std::unique_lock lock(mu_);
  if (!enabled_backends_.emplace(device_type).second) return;
  std::vector<KernelDef> still_waiting;
  for (KernelDef& def : waiting_for_backend_) {
    if (def.device_type() == device_type) {
      std::string op = def.op();
      kernels_.emplace(std::move(op), std::move(def));
    } else {
      still_waiting.push_back(std::move(def));
    }
  }
  waiting_for_backend_ = std::move(still_waiting);
}

const KernelDef* KernelRegistry::Find(std::string_view op, std::string_view device_type,
                                      const AttrMap& attrs) const {
  std::shared_lock lock(mu_);
  const KernelDef* best = nullptr;
  auto [begin, end] = kernels_.equal_range(op);
  for (auto it = begin; it != end; ++it) {
    const KernelDef& k = it->second;
    if (k.device_type() != device_type || !k.Matches(attrs)) continue;
    if (best == nullptr || k.priority() > best->priority()) best = &k;
  }
  return best;
}

std::vector<const KernelDef*> KernelRegistry::KernelsForOp(std::string_view op) const {
  std::shared_lock lock(mu_);
  std::vector<const KernelDef*> out;
  auto [begin, end] = kernels_.equal_range(op);
  for (auto it = begin; it != end; ++it) out.push_back(&it->second);
  return out;
}

std::vector<std::pair<std::string, int>> KernelRegistry::PrioritizedTypes(
    const Node& node, const std::vector<std::string>& device_types) const {
  std::vector<std::pair<std::string, int>> out;
  for (const std::string& t : device_types) {
    if (const KernelDef* k = Find(node.op(), t, node.attrs())) out.emplace_back(t, k->priority());
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

std::string KernelRegistry::NoKernelMessage(const Node& node,
                                            const std::vector<std::string>& device_types) const {
  std::vector<std::string> type_attrs;
  for (const auto& [name, value] : node.attrs()) {
    if (std::holds_alternative<DType>(value))
      type_attrs.push_back(fmt::format("{}={}", name, DTypeName(std::get<DType>(value))));
  }
  std::vector<std::string> registered;
  for (const KernelDef* k : KernelsForOp(node.op())) registered.push_back("  " + k->DebugString());
  return fmt::format(
      "No OpKernel was registered to support Op '{}' used by {{{{node {}}}}} with these attrs: "
      "[{}]\nRegistered devices: [{}]\nRegistered kernels:\n{}",
      node.op(), node.name(), fmt::join(type_attrs, ", "), fmt::join(device_types, ", "),
      registered.empty() ? "  <no registered kernels>"
                         : fmt::format("{}", fmt::join(registered, "\n")));
}

namespace {

// Marks the slots of every argument named in `names` (a list argument spans N slots).
std::vector<bool> ArgSlots(const std::vector<ArgDef>& args, const Node& node,
                           const std::vector<std::string>& names, int num_slots) {
  std::vector<bool> host(num_slots, false);
  int slot = 0;
  for (const ArgDef& a : args) {
    int n = 1;
    if (!a.number_attr.empty() && node.HasAttr(a.number_attr))
      n = static_cast<int>(node.attr<int64_t>(a.number_attr));
    const bool on_host = std::find(names.begin(), names.end(), a.name) != names.end();
    for (int k = 0; k < n && slot < num_slots; ++k, ++slot) host[slot] = on_host;
  }
  return host;
}

void HostMemorySlots(const KernelDef* def, const Node& node, std::vector<bool>* host_inputs,
                     std::vector<bool>* host_outputs) {
  host_inputs->assign(node.num_inputs(), false);
  host_outputs->assign(node.num_outputs(), false);
  if (def == nullptr || def->host_memory_args().empty()) return;
  *host_inputs = ArgSlots(node.op_def().inputs(), node, def->host_memory_args(), node.num_inputs());
  *host_outputs =
      ArgSlots(node.op_def().outputs(), node, def->host_memory_args(), node.num_outputs());
}

}  // namespace

void KernelRegistry::MemoryTypes(const Node& node, std::string_view device_type,
                                 std::vector<bool>* host_inputs,
                                 std::vector<bool>* host_outputs) const {
  HostMemorySlots(Find(node.op(), device_type, node.attrs()), node, host_inputs, host_outputs);
}

StatusOr<std::unique_ptr<OpKernel>> KernelRegistry::Create(const Node& node,
                                                           std::string_view device_type) const {
  const KernelDef* def = Find(node.op(), device_type, node.attrs());
  if (def == nullptr) return NotFoundError(node, {std::string(device_type)});
  std::unique_ptr<OpKernel> kernel = def->factory(node);
  if (!def->host_memory_args().empty()) {
    std::vector<bool> in, out;
    HostMemorySlots(def, node, &in, &out);
    kernel->set_memory_types(std::move(in), std::move(out));
  }
  return kernel;
}

}  // namespace pf
