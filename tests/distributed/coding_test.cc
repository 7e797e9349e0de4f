// The cluster runtime's wire formats: partitions travel as GraphDef (graph/graph_def.h's placed
// codecs) and tensors in raw messages (distributed/coding.h); malformed input from the network
// is an error naming what is wrong, never a crash. A Worker runs a registered partition with no
// transport at all.
#include "placeflow/distributed/coding.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>

#include "placeflow/devices/device.h"
#include "placeflow/distributed/rpc.pb.h"
#include "placeflow/distributed/worker.h"
#include "placeflow/executor/prepared_step.h"
#include "placeflow/graph/graph_def.h"
#include "placeflow/io/proto/graph.pb.h"
#include "tests/testing/test_util.h"

namespace pf::coding_test {
namespace {

using Catch::Matchers::Contains;

// x -> MatMul(x, w on /cpu:1) -> Relu; AddN over a list; Split's second output; a control edge.
struct Model {
  Graph g;
  Output x, s, q;
  Operation after;
  Model() {
    Scope root = Scope::Root(&g);
    x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {-1, 3});
    Scope c1 = root.WithDevice("/cpu:1");
    Output w = ops::Const(c1.WithOpName("w"), {1.f, -2.f, 3.f, 0.5f, -1.f, 2.f}, Shape{3, 2});
    Output y = ops::MatMul(root.WithOpName("y"), x, ops::Identity(c1.WithOpName("w/read"), w));
    Output z = ops::Relu(root.WithOpName("z"), y);
    s = ops::AddN(root.WithOpName("s"), {z, z, y});
    std::vector<Output> parts = ops::Split(root.WithOpName("split"), y, 1, 2);
    q = ops::Mul(root.WithOpName("q"), parts[0], parts[1]);
    after = ops::NoOp(root.WithOpName("after").WithControlDependencies({s}));
  }
};

// With PF_WRITE_FUZZ_SEEDS=<dir>, the test writes its wire bytes as the seeds of the fuzz
// targets: <dir>/<target>/<name> (tests/fuzz/corpus/ holds them).
void WriteSeed(const std::string& target, const std::string& name, const std::string& bytes) {
  const char* dir = std::getenv("PF_WRITE_FUZZ_SEEDS");
  if (dir == nullptr) return;
  std::filesystem::create_directories(std::string(dir) + "/" + target);
  std::ofstream(std::string(dir) + "/" + target + "/" + name, std::ios::binary) << bytes;
}

std::vector<const Node*> Shipped(const Partitions::Part& part) {
  std::vector<const Node*> nodes(part.nodes.begin(), part.nodes.end());
  for (const auto& [user, arg] : part.args) nodes.push_back(arg.node);
  return nodes;
}

TEST_CASE("A placed partition travels as a GraphDef and comes back exactly", "[distributed]") {
  Model m;
  DeviceSet devices;
  devices.Add(NewCpuDevice(0));
  devices.Add(NewCpuDevice(1));
  std::map<std::string, std::string> logged;
  StepPlan plan = PlanSignature({m.x}, {m.s, m.q}, {m.after}, devices, {}, &logged).value();
  REQUIRE(plan.partitions.parts.size() == 2);
  REQUIRE(plan.partitions.send_recv_pairs > 0);
  for (const Partitions::Part& part : plan.partitions.parts) {
    const std::vector<const Node*> shipped = Shipped(part);
    tensorflow::GraphDef def;
    REQUIRE(PlacedGraphToProto(shipped, &def).ok());
    tensorflow::GraphDef wire;
    REQUIRE(wire.ParseFromString(def.SerializeAsString()));
    WriteSeed("placed_graph", "part_" + std::string(1, part.device->name().back()),
              def.SerializeAsString());
    std::unique_ptr<Graph> back = PlacedGraphFromProto(wire).value();
    REQUIRE(back->num_nodes() == static_cast<int>(shipped.size()));
    std::set<const Node*> in_part(shipped.begin(), shipped.end());
    for (const Node* n : shipped) {
      INFO(n->name() << " (" << n->op() << ") on " << part.device->name());
      const Node* b = back->FindNode(n->name());
      REQUIRE(b != nullptr);
      CHECK(b->op() == n->op());
      CHECK(b->assigned_device() == n->assigned_device());
      CHECK(b->assigned_device() == part.device->name());
      REQUIRE(b->num_inputs() == n->num_inputs());
      for (int i = 0; i < n->num_inputs(); ++i) CHECK(b->input(i).name() == n->input(i).name());
      size_t controls = 0;
      for (const Node* c : n->control_inputs()) controls += in_part.count(c);
      CHECK(b->control_inputs().size() == controls);
      REQUIRE(b->num_outputs() == n->num_outputs());
      for (int i = 0; i < n->num_outputs(); ++i) {
        CHECK(b->output_dtype(i) == n->output_dtype(i));
        CHECK(b->output_shape(i) == n->output_shape(i));
      }
      REQUIRE(b->attrs().size() == n->attrs().size());
      for (const auto& [k, v] : n->attrs())
        CHECK(AttrValueToString(b->attrs().at(k)) == AttrValueToString(v));
    }
  }
}

// A one-node GraphDef ("c", a float Const) to break in one way at a time.
tensorflow::GraphDef OneConst() {
  Graph g;
  Node* c = ops::Const(Scope::Root(&g).WithOpName("c"), 2.f).node;
  c->set_assigned_device("/job:worker/replica:0/task:0/device:CPU:0");
  tensorflow::GraphDef def;
  ThrowIfError(PlacedGraphToProto({c}, &def));
  return def;
}

TEST_CASE("Malformed placed graphs are errors naming the node and the op", "[distributed]") {
  REQUIRE(PlacedGraphFromProto(OneConst()).ok());
  const auto error = [](const tensorflow::GraphDef& def) {
    auto g = PlacedGraphFromProto(def);
    REQUIRE_FALSE(g.ok());
    return std::string(g.status().message());
  };
  tensorflow::GraphDef def = OneConst();
  def.mutable_node(0)->set_op("NoSuchOp");
  CHECK_THAT(error(def), Contains("'c' (op: 'NoSuchOp')") && Contains("not registered"));
  CHECK(PlacedGraphFromProto(def).status().code() == Code::kNotFound);

  // A node without a name (a fuzz reproducer: its tensors could not be named) is refused.
  def = OneConst();
  def.mutable_node(0)->set_name("");
  CHECK_THAT(error(def), Contains("a node needs a name"));

  def = OneConst();
  def.mutable_node(0)->mutable_attr()->erase("_output_types");
  CHECK_THAT(error(def), Contains("'c' (op: 'Const')") && Contains("output dtypes"));

  def = OneConst();
  (*def.mutable_node(0)->mutable_attr())["_output_types"].mutable_list()->set_type(
      0, static_cast<tensorflow::DataType>(55));
  CHECK_THAT(error(def), Contains("'c' (op: 'Const')") && Contains("output 0"));

  def = OneConst();
  tensorflow::NodeDef* id = def.add_node();
  *id = def.node(0);
  id->set_name("id");
  id->set_op("Identity");
  id->add_input("c:3");
  (*id->mutable_attr())["T"].set_type(tensorflow::DT_FLOAT);
  id->mutable_attr()->erase("value");
  id->mutable_attr()->erase("dtype");
  CHECK_THAT(error(def), Contains("'id' (op: 'Identity')") && Contains("'c:3'"));
  id->set_input(0, "c:x");
  CHECK_THAT(error(def), Contains("'id'") && Contains("malformed input 'c:x'"));
  id->set_input(0, "gone");
  CHECK_THAT(error(def), Contains("'id'") && Contains("names no node"));
  id->set_input(0, "id");  // itself: a cycle
  CHECK_THAT(error(def), Contains("cycle"));
  id->set_input(0, "c");
  REQUIRE(PlacedGraphFromProto(def).ok());
  *def.add_node() = def.node(1);  // two nodes named "id"
  CHECK_THAT(error(def), Contains("two nodes named 'id'"));
}

TEST_CASE("FindOutput accepts node:index names and rejects junk", "[distributed]") {
  Graph g;
  Output c = ops::Const(Scope::Root(&g).WithOpName("c"), 2.f);
  CHECK(FindOutput(g, "c").value() == c);
  CHECK(FindOutput(g, "c:0").value() == c);
  for (const char* bad : {"c:1", "c:x", "c:-1", "c:0x", "gone:0", "", ":0", "c:"}) {
    INFO(bad);
    auto o = FindOutput(g, bad);
    REQUIRE_FALSE(o.ok());
    CHECK(o.status().code() == Code::kInvalidArgument);
  }
}

TEST_CASE("Raw messages carry tensors as slices; short or lying headers are errors",
          "[distributed]") {
  const Tensor a = testing::RandomTensor({3, 5}, 1), b = testing::Iota({7});
  rpc::RunGraphRequest header;
  header.set_graph_handle("h");
  TensorMeta(a, header.add_feed());
  TensorMeta(b, header.add_feed());
  grpc::ByteBuffer wire = EncodeRaw(header, {{a}, {b}});
  if (std::getenv("PF_WRITE_FUZZ_SEEDS") != nullptr) {  // a cut byte, then the message
    std::vector<grpc::Slice> slices;
    REQUIRE(wire.Dump(&slices).ok());
    std::string bytes(1, '\x25');
    for (const grpc::Slice& s : slices) bytes.append(s.begin(), s.end());
    WriteSeed("raw_message", "two_feeds", bytes);
  }
  RawReader reader;
  rpc::RunGraphRequest got;
  REQUIRE(reader.Open(&wire, &got).ok());
  CHECK(got.graph_handle() == "h");
  CHECK(reader.remaining() == a.TotalBytes() + b.TotalBytes());
  CHECK(ReadTensor(&reader, got.feed(0)).value().BitwiseEqual(a));
  CHECK(ReadTensor(&reader, got.feed(1)).value().BitwiseEqual(b));
  CHECK(reader.remaining() == 0);

  // A chunk: 12 bytes from offset 8.
  grpc::ByteBuffer chunk = EncodeRaw(header, {{a, 8, 12}});
  REQUIRE(reader.Open(&chunk, &got).ok());
  REQUIRE(reader.remaining() == 12);
  float part[3];
  REQUIRE(reader.Read(part, 12));
  for (int i = 0; i < 3; ++i) CHECK(part[i] == a.flat<float>()[2 + i]);
  CHECK_FALSE(reader.Read(part, 1));

  // Fewer bytes than the header's tensors need.
  grpc::ByteBuffer short_wire = EncodeRaw(header, {{a}});
  REQUIRE(reader.Open(&short_wire, &got).ok());
  REQUIRE(ReadTensor(&reader, got.feed(0)).ok());
  auto missing = ReadTensor(&reader, got.feed(1));
  CHECK(missing.status().code() == Code::kInternal);
  CHECK_THAT(std::string(missing.status().message()), Contains("ends before the 28 bytes"));

  // A header that declares far more than was sent: an error before anything is allocated.
  tensorflow::TensorProto huge;
  huge.set_dtype(tensorflow::DT_FLOAT);
  huge.mutable_tensor_shape()->add_dim()->set_size(int64_t{1} << 40);
  grpc::ByteBuffer few = EncodeRaw(header, {{a}});
  REQUIRE(reader.Open(&few, &got).ok());
  auto lied = ReadTensor(&reader, huge);
  CHECK_THAT(std::string(lied.status().message()), Contains("ends before the 4398046511104 bytes"));
  CHECK(reader.remaining() == a.TotalBytes());  // nothing consumed

  // A header length past the end; a header that does not parse.
  for (std::string bytes : {std::string("\xff\x00\x00\x00", 4) + "abc",
                            std::string("\x03\x00\x00\x00\xff\xff\xff", 7)}) {
    grpc::Slice slice(bytes);
    grpc::ByteBuffer bad(&slice, 1);
    CHECK_FALSE(reader.Open(&bad, &got).ok());
  }

  // Shapes no tensor can have, and strings (read whole by ReadTensor, never into a buffer).
  tensorflow::TensorProto meta;
  meta.set_dtype(tensorflow::DT_FLOAT);
  meta.mutable_tensor_shape()->add_dim()->set_size(int64_t{1} << 40);
  meta.mutable_tensor_shape()->add_dim()->set_size(int64_t{1} << 40);
  CHECK_THAT(std::string(NewTensorFor(meta).status().message()), Contains("too large"));
  meta.mutable_tensor_shape()->mutable_dim(0)->set_size(-1);
  CHECK(NewTensorFor(meta).status().code() == Code::kInvalidArgument);
  meta.mutable_tensor_shape()->mutable_dim(0)->set_size(-7);
  CHECK(NewTensorFor(meta).status().code() == Code::kInvalidArgument);
  meta.set_dtype(tensorflow::DT_STRING);
  meta.mutable_tensor_shape()->Clear();
  CHECK(NewTensorFor(meta).status().code() == Code::kInvalidArgument);
}

// The bytes of a DT_STRING tensor on the wire, built by hand: u64 length, then the bytes.
std::string StringFrame(const std::vector<std::string>& values) {
  std::string out;
  for (const std::string& v : values) {
    const uint64_t len = v.size();
    out.append(reinterpret_cast<const char*>(&len), 8);
    out += v;
  }
  return out;
}

std::string WireBytes(const grpc::ByteBuffer& wire) {
  std::vector<grpc::Slice> slices;
  REQUIRE(wire.Dump(&slices).ok());
  std::string bytes;
  for (const grpc::Slice& s : slices) bytes.append(s.begin(), s.end());
  return bytes;
}

TEST_CASE("Raw messages carry string tensors as length-prefixed strings; bad frames are errors",
          "[distributed][strings]") {
  Tensor words(DT_STRING, {2, 2});
  const std::vector<std::string> values = {"Hello, distributed placeflow!", "",
                                           std::string("a\0b\xff", 4), std::string(300, 'z')};
  for (size_t i = 0; i < values.size(); ++i) words.flat<std::string>()[i] = values[i];
  const Tensor after = testing::Iota({3});
  rpc::RunGraphRequest header;
  TensorMeta(words, header.add_feed());
  TensorMeta(after, header.add_feed());
  CHECK(header.feed(0).dtype() == tensorflow::DT_STRING);
  grpc::ByteBuffer wire = EncodeRaw(header, {{words}, {after}});
  const std::string bytes = WireBytes(wire);
  // The frame, independently: [u32 header length][header][strings][the int32s].
  const std::string head = header.SerializeAsString();
  REQUIRE(bytes.size() == 4 + head.size() + StringFrame(values).size() + after.TotalBytes());
  CHECK(bytes.substr(4 + head.size(), StringFrame(values).size()) == StringFrame(values));
  WriteSeed("raw_message", "strings", std::string(1, '\x25') + bytes);

  RawReader reader;
  rpc::RunGraphRequest got;
  REQUIRE(reader.Open(&wire, &got).ok());
  auto back = ReadTensor(&reader, got.feed(0));
  REQUIRE(back.ok());
  CHECK(back->shape() == Shape{2, 2});
  CHECK(back->BitwiseEqual(words));  // DT_STRING: compares the strings' values
  CHECK(ReadTensor(&reader, got.feed(1)).value().BitwiseEqual(after));
  CHECK(reader.remaining() == 0);
  // A chunk request's offset and size do not cut a string tensor.
  grpc::ByteBuffer whole = EncodeRaw(header, {{words, 8, 3}});
  REQUIRE(reader.Open(&whole, &got).ok());
  CHECK(ReadTensor(&reader, got.feed(0)).value().BitwiseEqual(words));

  // Malformed frames: errors that say what is missing, before anything is allocated.
  auto read = [&](const tensorflow::TensorProto& meta, const std::string& frame) {
    rpc::RunGraphRequest h;
    const uint32_t len = 0;
    std::string raw(reinterpret_cast<const char*>(&len), 4);
    raw += frame;
    grpc::Slice slice(raw);
    grpc::ByteBuffer buf(&slice, 1);
    RawReader r;
    REQUIRE(r.Open(&buf, &h).ok());
    auto t = ReadTensor(&r, meta);
    REQUIRE_FALSE(t.ok());
    CHECK(t.status().code() == Code::kInternal);
    return std::string(t.status().message());
  };
  tensorflow::TensorProto meta;
  meta.set_dtype(tensorflow::DT_STRING);
  meta.mutable_tensor_shape()->add_dim()->set_size(2);
  // One string where the header says two.
  CHECK_THAT(read(meta, StringFrame({"abc"})),
             Contains("ends before the 2 length prefixes of a string tensor of shape [2]"));
  // The first string takes the bytes the second's length needed.
  std::string greedy = StringFrame({std::string(10, 'a'), "b"});
  greedy[0] = 19;  // 10 bytes + the second prefix + "b" = 19: nothing left for a length
  CHECK_THAT(read(meta, greedy),
             Contains("ends before the length of string 1 of a string tensor of shape [2]"));
  // A length past the end.
  std::string lying = StringFrame({"abc", "de"});
  lying[8 + 3] = '\x7f';
  CHECK_THAT(read(meta, lying), Contains("ends inside string 1 of a string tensor of shape [2]: "
                                         "its length says 127 bytes, 2 are left"));
  // A huge length, and a header with 2^40 strings: no allocation follows either.
  std::string huge = StringFrame({"abc", "de"});
  for (int k = 0; k < 8; ++k) huge[11 + k] = '\xff';
  CHECK_THAT(read(meta, huge), Contains("its length says 18446744073709551615 bytes"));
  meta.mutable_tensor_shape()->mutable_dim(0)->set_size(int64_t{1} << 40);
  CHECK_THAT(read(meta, StringFrame({"abc", "de"})),
             Contains("ends before the 1099511627776 length prefixes"));
}

// Registers y = MatMul(x, w) on `worker` as a master would; returns the handle.
std::string RegisterMatMul(Worker& worker, Graph& g, Output* x, Output* y) {
  Scope root = Scope::Root(&g);
  *x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {2, 3});
  Output w = ops::Const(root.WithOpName("w"), {1.f, -2.f, 3.f, 0.5f, -1.f, 2.f}, Shape{3, 2});
  *y = ops::MatMul(root.WithOpName("y"), *x, w);
  std::map<std::string, std::string> logged;
  StepPlan plan = PlanSignature({*x}, {*y}, {}, worker.devices(), {}, &logged).value();
  REQUIRE(plan.partitions.parts.size() == 1);
  const Partitions::Part& part = plan.partitions.parts[0];
  rpc::RegisterGraphRequest req;
  rpc::PartitionProto* pp = req.add_partition();
  pp->set_device(part.device->name());
  ThrowIfError(PlacedGraphToProto(Shipped(part), pp->mutable_graph()));
  for (const auto& [user, arg] : part.args) pp->add_feed(arg.name());
  pp->add_fetch(Output(plan.partitions.copy_of.at(y->node), 0).name());
  rpc::RegisterGraphResponse resp;
  ThrowIfError(worker.RegisterGraph(req, &resp));
  return resp.graph_handle();
}

Status RunAndWait(Worker& worker, std::shared_ptr<RunGraphCall> call) {
  std::promise<Status> done;
  worker.RunGraphAsync(call, [&done](Status s) { done.set_value(s); });
  return done.get_future().get();
}

TEST_CASE("A Worker runs a registered partition with no transport", "[distributed]") {
  Worker worker(ClusterSpec::Parse("worker=localhost:1").value(), "worker", 0, {});
  Graph g;
  Output x, y;
  const std::string handle = RegisterMatMul(worker, g, &x, &y);
  const Tensor feed = testing::RandomTensor({2, 3}, 3);
  auto call = std::make_shared<RunGraphCall>();
  call->request.set_graph_handle(handle);
  call->request.set_step_id(1);
  call->feeds.push_back(feed);
  REQUIRE(RunAndWait(worker, call).ok());
  REQUIRE(call->fetches.size() == 1);
  const float w[3][2] = {{1, -2}, {3, 0.5f}, {-1, 2}};
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      float want = 0;
      for (int k = 0; k < 3; ++k) want += feed.flat<float>()[i * 3 + k] * w[k][j];
      CHECK(call->fetches[0].flat<float>()[i * 2 + j] == Approx(want).epsilon(1e-6));
    }
  }

  auto unknown = std::make_shared<RunGraphCall>();
  unknown->request.set_graph_handle("nope");
  unknown->request.set_step_id(2);
  CHECK(RunAndWait(worker, unknown).reason() == Reason::kGraphNotRegistered);

  auto no_feed = std::make_shared<RunGraphCall>();
  no_feed->request.set_graph_handle(handle);
  no_feed->request.set_step_id(3);
  Status s = RunAndWait(worker, no_feed);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(std::string(s.message()), Contains("0 feeds"));

  auto ended = std::make_shared<RunGraphCall>(*call);
  ended->request.add_ended_step(1);  // step 1 is over: running it again is an error
  CHECK(RunAndWait(worker, ended).code() == Code::kAborted);
}

}  // namespace
}  // namespace pf::coding_test
