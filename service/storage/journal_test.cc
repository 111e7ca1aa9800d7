#include "service/storage/journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <cstdlib>
#include <fstream>
#include <future>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "service/storage/journal_frame.h"

namespace cohort {
namespace service {
namespace {

using ::testing::HasSubstr;

std::string TempDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class JournalTest : public ::testing::TestWithParam<bool> {
 protected:
  JournalOptions Options(const std::string& name) {
    JournalOptions options;
    options.path = absl::StrCat(TempDir(), "/", name,
                                GetParam() ? "_ring" : "_pwrite");
    options.use_io_uring = GetParam();
    unlink(options.path.c_str());
    return options;
  }
};

// Property: with 8 threads appending at once, every callback is called
// exactly once with OK, and afterwards the file holds every record exactly
// once, each thread's records in the order it appended them, and nothing
// else.
TEST_P(JournalTest, ConcurrentAppendsAreWrittenOnceInOrder) {
  const JournalOptions options = Options("concurrent");
  auto journal = Journal::Open(options, 0);
  ASSERT_TRUE(journal.ok()) << journal.status();
  EXPECT_STREQ((*journal)->backend(), GetParam() ? "io_uring" : "pwrite");
  constexpr int kThreads = 8;
  constexpr int kRecords = 300;
  std::atomic<int> ok{0}, failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRecords; ++i) {
        (*journal)->Append(static_cast<uint8_t>(t + 1), absl::StrCat(t, ":", i),
                           [&](absl::Status s) { (s.ok() ? ok : failed)++; });
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  (*journal)->Close();
  EXPECT_EQ(ok.load(), kThreads * kRecords);
  EXPECT_EQ(failed.load(), 0);
  const uint64_t groups = (*journal)->profile().batches();
  EXPECT_GE(groups, 1u);
  EXPECT_LE(groups, uint64_t{kThreads * kRecords});
  EXPECT_EQ((*journal)->profile().updates(), uint64_t{kThreads * kRecords});

  const std::string data = ReadFile(options.path);
  EXPECT_EQ((*journal)->durable_bytes(), data.size());
  FrameReader reader(data);
  Frame frame;
  std::vector<int> next(kThreads, 0);
  int records = 0;
  while (reader.Next(&frame)) {
    ++records;
    std::vector<std::string> parts = absl::StrSplit(frame.payload, ':');
    ASSERT_EQ(parts.size(), 2u);
    int t = 0, i = 0;
    ASSERT_TRUE(absl::SimpleAtoi(parts[0], &t));
    ASSERT_TRUE(absl::SimpleAtoi(parts[1], &i));
    ASSERT_EQ(frame.type, t + 1);
    EXPECT_EQ(i, next[t]) << "thread " << t;
    next[t] = i + 1;
  }
  EXPECT_EQ(reader.stop(), FrameReader::Stop::kEnd);
  EXPECT_EQ(records, kThreads * kRecords);
}

// Property: group_max caps a group, and group_wait_us gathers records that
// arrive within the wait into one write.
TEST_P(JournalTest, GroupsAreCappedAndGathered) {
  JournalOptions options = Options("groups");
  options.group_max = 4;
  options.group_wait_us = 200000;  // far longer than appending 10 records
  auto journal = Journal::Open(options, 0);
  ASSERT_TRUE(journal.ok()) << journal.status();
  std::atomic<int> done{0};
  for (int i = 0; i < 10; ++i) {
    (*journal)->Append(1, "r", [&](absl::Status s) {
      EXPECT_TRUE(s.ok());
      ++done;
    });
  }
  (*journal)->Close();
  EXPECT_EQ(done.load(), 10);
  // 4 + 4 + 2: the last two wait (Close ends the wait early).
  EXPECT_EQ((*journal)->profile().batches(), 3u);
  cohort::v1::StageStats stats;
  (*journal)->profile().ToProto(&stats);
  EXPECT_EQ(stats.name(), "journal");
  EXPECT_EQ(stats.updates(), 10u);
  // Each group's write-and-sync was timed once, and took some time.
  const DurationBuckets syncs = (*journal)->SyncDurations();
  EXPECT_EQ(syncs.count, 3u);
  EXPECT_GT(syncs.sum_seconds, 0.0);
  EXPECT_EQ(syncs.cumulative.back(), 3u);  // each well under 10 s
}

// Property: reopening at the length of the whole frames drops a torn tail,
// and appends continue after the last good frame.
TEST_P(JournalTest, ReopenAtValidLengthDropsATornTail) {
  const JournalOptions options = Options("reopen");
  {
    auto journal = Journal::Open(options, 0);
    ASSERT_TRUE(journal.ok()) << journal.status();
    for (const char* p : {"a", "bb", "ccc"}) {
      (*journal)->Append(7, p, [](absl::Status s) { EXPECT_TRUE(s.ok()); });
    }
  }  // destructor closes
  std::string data = ReadFile(options.path);
  std::string torn;
  AppendFrame(7, "never finished", &torn);
  {
    std::ofstream out(options.path, std::ios::binary | std::ios::app);
    out << torn.substr(0, torn.size() - 3);
  }
  const std::string on_disk = ReadFile(options.path);
  FrameReader scan(on_disk);
  Frame frame;
  while (scan.Next(&frame)) {
  }
  EXPECT_EQ(scan.stop(), FrameReader::Stop::kTorn);
  EXPECT_EQ(scan.valid_bytes(), data.size());
  EXPECT_EQ(scan.discarded_bytes(), torn.size() - 3);

  auto journal = Journal::Open(options, scan.valid_bytes());
  ASSERT_TRUE(journal.ok()) << journal.status();
  // std::promise, not absl::Notification: ThreadSanitizer sees only
  // synchronisation in instrumented code (Debian's Abseil is not).
  std::promise<absl::Status> written;
  (*journal)->Append(7, "dddd",
                     [&](absl::Status s) { written.set_value(s); });
  EXPECT_TRUE(written.get_future().get().ok());
  const std::string after = ReadFile(options.path);
  FrameReader reader(after);
  std::vector<std::string> payloads;
  while (reader.Next(&frame)) payloads.emplace_back(frame.payload);
  EXPECT_EQ(reader.stop(), FrameReader::Stop::kEnd);
  EXPECT_THAT(payloads, ::testing::ElementsAre("a", "bb", "ccc", "dddd"));
  EXPECT_EQ((*journal)->durable_bytes(), after.size());
}

TEST_P(JournalTest, AppendAfterCloseIsRefusedOnTheCallersThread) {
  const JournalOptions options = Options("closed");
  auto journal = Journal::Open(options, 0);
  ASSERT_TRUE(journal.ok()) << journal.status();
  (*journal)->Close();
  (*journal)->Close();  // idempotent
  absl::Status got = absl::OkStatus();
  bool called = false;
  const std::thread::id caller = std::this_thread::get_id();
  (*journal)->Append(1, "late", [&](absl::Status s) {
    called = true;
    got = s;
    EXPECT_EQ(std::this_thread::get_id(), caller);
  });
  EXPECT_TRUE(called);
  EXPECT_TRUE(absl::IsFailedPrecondition(got)) << got;
  EXPECT_THAT(got.message(), HasSubstr(options.path));
}

// Property: records appended before Rotate land in the old file and later
// ones in the new file; every callback of the old file runs before the
// rotation's, which runs before any of the new file's.
TEST_P(JournalTest, RotateSplitsRecordsAtTheCall) {
  const JournalOptions options = Options("rotate_a");
  const std::string next = Options("rotate_b").path;
  auto journal = Journal::Open(options, 0);
  ASSERT_TRUE(journal.ok()) << journal.status();
  std::mutex mu;
  std::vector<std::string> order;
  auto log = [&](std::string what) {
    return [&, what](absl::Status s) {
      EXPECT_TRUE(s.ok()) << what << " " << s;
      std::lock_guard<std::mutex> lock(mu);
      order.push_back(what);
    };
  };
  for (const char* p : {"a1", "a2", "a3"}) (*journal)->Append(1, p, log(p));
  (*journal)->Rotate(next, log("rotate"));
  for (const char* p : {"b1", "b2"}) (*journal)->Append(1, p, log(p));
  (*journal)->Close();
  EXPECT_THAT(order, ::testing::ElementsAre("a1", "a2", "a3", "rotate", "b1",
                                            "b2"));
  auto payloads = [](const std::string& data) {
    std::vector<std::string> out;
    FrameReader reader(data);
    Frame frame;
    while (reader.Next(&frame)) out.emplace_back(frame.payload);
    EXPECT_EQ(reader.stop(), FrameReader::Stop::kEnd);
    return out;
  };
  EXPECT_THAT(payloads(ReadFile(options.path)),
              ::testing::ElementsAre("a1", "a2", "a3"));
  const std::string second = ReadFile(next);
  EXPECT_THAT(payloads(second), ::testing::ElementsAre("b1", "b2"));
  EXPECT_EQ((*journal)->durable_bytes(), second.size());
}

// Property: a rotation that cannot create its file fails the journal: the
// rotation and every later record get the error naming the path.
TEST_P(JournalTest, FailedRotationFailsLaterRecords) {
  const JournalOptions options = Options("rotate_fail");
  auto journal = Journal::Open(options, 0);
  ASSERT_TRUE(journal.ok()) << journal.status();
  const std::string bad = absl::StrCat(TempDir(), "/no/such/dir/journal-2");
  std::promise<absl::Status> rotated;
  (*journal)->Rotate(bad, [&](absl::Status s) { rotated.set_value(s); });
  const absl::Status rotation = rotated.get_future().get();
  EXPECT_TRUE(absl::IsNotFound(rotation)) << rotation;
  EXPECT_THAT(rotation.message(), HasSubstr(bad));
  absl::Status later;
  (*journal)->Append(1, "x", [&](absl::Status s) { later = s; });
  EXPECT_EQ(later, rotation);  // refused at once with the same error
}

INSTANTIATE_TEST_SUITE_P(Backends, JournalTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "io_uring" : "pwrite";
                         });

TEST(JournalOpenTest, BadPathsAndOptionsAreClearErrors) {
  JournalOptions options;
  options.path = absl::StrCat(TempDir(), "/no/such/dir/journal");
  auto missing = Journal::Open(options, 0);
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(absl::IsNotFound(missing.status())) << missing.status();
  EXPECT_THAT(missing.status().message(), HasSubstr(options.path));

  options.path = TempDir();  // a directory
  auto directory = Journal::Open(options, 0);
  ASSERT_FALSE(directory.ok());
  EXPECT_THAT(directory.status().message(), HasSubstr(options.path));

  options.path = absl::StrCat(TempDir(), "/journal_options");
  options.group_max = 0;
  auto bad = Journal::Open(options, 0);
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(bad.status()));
  EXPECT_THAT(bad.status().message(), HasSubstr("group_max"));

  options.group_max = 1;
  options.path = "";
  EXPECT_TRUE(absl::IsInvalidArgument(Journal::Open(options, 0).status()));
}

}  // namespace
}  // namespace service
}  // namespace cohort
