// FromTFRecord and FromFileNames: records of several files (plain and compressed) in order, the
// interleave over files against a naive reference, shards of files for workers, string batches,
// and damaged files giving DataLoss naming the file (or skips), through the dataset API.
#include <algorithm>
#include <filesystem>
#include <fstream>

#include "placeflow/data/dataset.h"
#include "placeflow/io/record_io.h"
#include "tests/testing/test_util.h"

namespace pf::data::tfrecord_dataset_test {
namespace {

namespace fs = std::filesystem;

// A temporary directory removed at the end of the test.
// Record r of file f: "f<f>-r<r>" (5 bytes for f, r < 10).
std::string Record(int f, int r) { return fmt::format("f{}-r{}", f, r); }

// Writes `records` records of file number `f` to dir/name.
std::string WriteFile(const testing::TempDir& d, const std::string& name, int f, int records,
                      io::Compression c = io::Compression::kNone) {
  const std::string path = (d.path / name).string();
  auto w = io::RecordWriter::Open(path, c).ValueOrThrow();
  for (int r = 0; r < records; ++r) ThrowIfError(w->Write(Record(f, r)));
  ThrowIfError(w->Close());
  return path;
}

// Component 0 of every element, as strings.
StatusOr<std::vector<std::string>> Strings(const Dataset& d) {
  std::vector<std::string> out;
  auto it = d.MakeIterator();
  Element e;
  for (;;) {
    PF_ASSIGN_OR_RETURN(bool more, it->GetNext(&e));
    if (!more) return out;
    REQUIRE(e[0].dtype() == DT_STRING);
    REQUIRE(e[0].rank() == 0);
    out.push_back(e[0].data<std::string>()[0]);
  }
}

TEST_CASE("FromTFRecord reads the records of its files in order, compressed or not",
          "[data][tfrecord]") {
  testing::TempDir d("tfrecord_dataset");
  const std::vector<int> sizes = {3, 0, 4};  // an empty file in the middle
  std::vector<std::string> plain, gz;
  std::vector<std::string> want;
  for (int f = 0; f < 3; ++f) {
    plain.push_back(WriteFile(d, fmt::format("p{}.tfrecord", f), f, sizes[f]));
    gz.push_back(
        WriteFile(d, fmt::format("g{}.tfrecord.gz", f), f, sizes[f], io::Compression::kGzip));
    for (int r = 0; r < sizes[f]; ++r) want.push_back(Record(f, r));
  }
  Dataset ds = Dataset::FromTFRecord(plain);
  REQUIRE(ds.spec().size() == 1);
  CHECK(ds.spec()[0].dtype == DT_STRING);
  CHECK(ds.spec()[0].shape == Shape{});
  CHECK(Strings(ds).ValueOrThrow() == want);
  CHECK(Strings(Dataset::FromTFRecord(gz, io::Compression::kGzip)).ValueOrThrow() == want);
  // A second iterator starts again from the first file.
  CHECK(Strings(ds.Take(2)).ValueOrThrow() ==
        std::vector<std::string>(want.begin(), want.begin() + 2));
  CHECK_THROWS_WITH(Dataset::FromTFRecord({}), Catch::Contains("at least one file"));
  // A missing file is NotFound naming it, when the iterator reaches it.
  StatusOr<std::vector<std::string>> missing =
      Strings(Dataset::FromTFRecord({plain[0], (d.path / "nope.tfrecord").string()}));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == Code::kNotFound);
  CHECK_THAT(missing.status().message(), Catch::Contains("nope.tfrecord"));
}

TEST_CASE("Batches of serialized records keep their strings in order", "[data][tfrecord]") {
  testing::TempDir d("tfrecord_dataset");
  const std::string path = WriteFile(d, "a.tfrecord", 1, 5);
  auto it = Dataset::FromTFRecord({path}).Batch(2).MakeIterator();
  Element e;
  std::vector<std::vector<std::string>> batches;
  while (it->GetNext(&e).ValueOrThrow()) {
    REQUIRE(e[0].dtype() == DT_STRING);
    const std::string* s = e[0].data<std::string>();
    batches.emplace_back(s, s + e[0].num_elements());
  }
  CHECK(batches == std::vector<std::vector<std::string>>{
                       {Record(1, 0), Record(1, 1)}, {Record(1, 2), Record(1, 3)}, {Record(1, 4)}});
}

// tf.data's interleave as its documentation specifies it, written out naively: cycle_length
// slots visited round-robin; a visit to an empty slot opens the next file there (none left:
// the visit moves on); a visit takes up to block_length records, and a file that runs out
// empties its slot and ends the visit.
std::vector<std::string> ReferenceInterleave(const std::vector<std::vector<std::string>>& files,
                                             size_t cycle, size_t block) {
  std::vector<std::string> out;
  std::vector<int> file(cycle, -1);  // the file open in each slot
  std::vector<size_t> pos(cycle, 0);
  size_t next_file = 0, open = 0;
  for (size_t slot = 0; next_file < files.size() || open > 0; slot = (slot + 1) % cycle) {
    if (file[slot] < 0) {
      if (next_file == files.size()) continue;
      file[slot] = static_cast<int>(next_file++);
      pos[slot] = 0;
      ++open;
    }
    const std::vector<std::string>& f = files[file[slot]];
    size_t taken = 0;
    while (taken < block && pos[slot] < f.size()) {
      out.push_back(f[pos[slot]++]);
      ++taken;
    }
    if (taken < block) {  // ran out (an empty file ends its visit at once, taking nothing)
      file[slot] = -1;
      --open;
    }
  }
  return out;
}

TEST_CASE("Interleave over TFRecord files matches a naive reference", "[data][tfrecord]") {
  testing::TempDir d("tfrecord_dataset");
  const std::vector<int> sizes = {3, 5, 1, 4, 0, 2};
  std::vector<std::string> names;
  std::vector<std::vector<std::string>> contents;
  for (int f = 0; f < static_cast<int>(sizes.size()); ++f) {
    names.push_back(WriteFile(d, fmt::format("f{}.tfrecord", f), f, sizes[f]));
    contents.emplace_back();
    for (int r = 0; r < sizes[f]; ++r) contents.back().push_back(Record(f, r));
  }
  auto open_file = [](const Element& e) -> StatusOr<Dataset> {
    return Dataset::FromTFRecord({e[0].data<std::string>()[0]});
  };
  for (int cycle : {1, 2, 3, 8}) {
    for (int block : {1, 2, 3}) {
      INFO("cycle_length " << cycle << ", block_length " << block);
      std::vector<std::string> got =
          Strings(Dataset::FromFileNames(names).Interleave(open_file, cycle, block)).ValueOrThrow();
      CHECK(got == ReferenceInterleave(contents, cycle, block));
      // Every record once.
      std::vector<std::string> all, sorted = got;
      for (const auto& c : contents) all.insert(all.end(), c.begin(), c.end());
      std::sort(all.begin(), all.end());
      std::sort(sorted.begin(), sorted.end());
      CHECK(sorted == all);
    }
  }
  // Two workers, each its shard of the files (every other file).
  std::vector<std::string> worker1 =
      Strings(Dataset::FromFileNames(names).Shard(2, 1).Interleave(open_file, 2, 1)).ValueOrThrow();
  CHECK(worker1 == ReferenceInterleave({contents[1], contents[3], contents[5]}, 2, 1));
}

TEST_CASE("A damaged record is DataLoss naming the file, or skipped", "[data][tfrecord]") {
  testing::TempDir d("tfrecord_dataset");
  const std::string good = WriteFile(d, "good.tfrecord", 0, 2);
  const std::string bad = WriteFile(d, "bad.tfrecord", 1, 3);
  {
    // Each record is 8 + 4 + 5 + 4 = 21 bytes: record 1's data starts at 21 + 12.
    std::fstream f(bad, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(21 + 12);
    f.put('X');
  }
  StatusOr<std::vector<std::string>> r = Strings(Dataset::FromTFRecord({good, bad}));
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Code::kDataLoss);
  CHECK_THAT(r.status().message(),
             Catch::Contains("offset 21") && Catch::Contains(bad) && Catch::Contains("data crc"));
  CHECK(Strings(Dataset::FromTFRecord({good, bad}, io::Compression::kNone, /*skip_corrupt=*/true))
            .ValueOrThrow() ==
        std::vector<std::string>{Record(0, 0), Record(0, 1), Record(1, 0), Record(1, 2)});
}

}  // namespace
}  // namespace pf::data::tfrecord_dataset_test
