#include "service/storage/durability.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "matcher/types.h"

namespace cohort {
namespace service {
namespace {

using ::testing::HasSubstr;

std::string FreshDir(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = absl::StrCat(tmp ? tmp : "/tmp", "/durability_",
                                       name);
  EXPECT_EQ(std::system(absl::StrCat("rm -rf '", dir, "'").c_str()), 0);
  return dir;  // Open creates it
}

std::vector<std::string> Files(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  while (dirent* e = d ? readdir(d) : nullptr) {
    if (e->d_name[0] != '.') names.emplace_back(e->d_name);
  }
  if (d) closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

// Copies `dir` to `to` (replacing it) as it is now, as a SIGKILL would
// leave it. The background fold may write a snapshot and delete the
// generations it folded while `cp` runs, which no crash would leave (a
// journal gone, its snapshot not yet listed): a copy counts only if the
// directory held the same files before and after it, else it is taken
// again.
bool CopyDir(const std::string& dir, const std::string& to) {
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const std::vector<std::string> before = Files(dir);
    if (std::system(absl::StrCat("rm -rf '", to, "'; cp -r '", dir, "' '", to,
                                 "' 2>/dev/null")
                        .c_str()) == 0 &&
        Files(dir) == before) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

SubscriptionInput Sub(uint32_t subscriber, uint32_t attribute, int64_t v) {
  SubscriptionInput s;
  s.subscriber = subscriber;
  s.predicates = {{attribute, matcher::Op::kEq, v, 0}};
  return s;
}

// Drives a Durability like the engine will: ids assigned under one lock in
// the order the changes are logged; a model of what was acknowledged.
class Driver {
 public:
  explicit Driver(Durability* d, uint64_t next_id = 1)
      : d_(d), next_id_(next_id) {}

  void Subscribe(uint32_t subscriber, uint32_t attribute, int n) {
    std::vector<SubscriptionInput> subs;
    for (int i = 0; i < n; ++i) subs.push_back(Sub(subscriber, attribute, i));
    uint64_t first;
    {
      std::lock_guard<std::mutex> lock(mu_);
      first = next_id_;
      next_id_ += n;
      d_->LogSubscribe(first, subs, [this, first, subs](absl::Status s) {
        ASSERT_TRUE(s.ok()) << s;
        std::lock_guard<std::mutex> acked(acked_mu_);
        for (size_t i = 0; i < subs.size(); ++i) acked_[first + i] = subs[i];
      });
    }
  }

  void UnsubscribeSome(int every) {
    std::vector<uint64_t> ids;
    {
      std::lock_guard<std::mutex> acked(acked_mu_);
      int k = 0;
      for (const auto& [id, s] : acked_) {
        if (++k % every == 0 && !removing_.count(id)) ids.push_back(id);
      }
      for (uint64_t id : ids) removing_.insert(id);
    }
    if (ids.empty()) return;
    std::promise<void> done;  // std::, so that tsan sees the hand-off
    {
      std::lock_guard<std::mutex> lock(mu_);
      d_->LogUnsubscribe(ids, [&, ids](absl::Status s) {
        EXPECT_TRUE(s.ok()) << s;
        {
          std::lock_guard<std::mutex> acked(acked_mu_);
          for (uint64_t id : ids) acked_.erase(id);
        }
        done.set_value();
      });
    }
    done.get_future().wait();
  }

  // Waits until every change logged so far is acknowledged (an empty
  // unsubscribe record is a barrier: it is acknowledged after them).
  void Sync() {
    std::promise<void> done;
    {
      std::lock_guard<std::mutex> lock(mu_);
      d_->LogUnsubscribe({}, [&](absl::Status s) {
        EXPECT_TRUE(s.ok()) << s;
        done.set_value();
      });
    }
    done.get_future().wait();
  }

  std::map<uint64_t, SubscriptionInput> acked() {
    std::lock_guard<std::mutex> acked(acked_mu_);
    return acked_;
  }
  uint64_t next_id() const { return next_id_; }

 private:
  Durability* d_;
  std::mutex mu_;
  uint64_t next_id_;
  std::mutex acked_mu_;
  std::map<uint64_t, SubscriptionInput> acked_;
  std::set<uint64_t> removing_;
};

void ExpectLive(const std::map<uint64_t, SubscriptionInput>& got,
                const std::map<uint64_t, SubscriptionInput>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [id, s] : want) {
    auto it = got.find(id);
    ASSERT_NE(it, got.end()) << id;
    EXPECT_EQ(it->second.subscriber, s.subscriber) << id;
    EXPECT_EQ(it->second.predicates, s.predicates) << id;
  }
}

// Property: with 4 threads logging changes and snapshots every 25 records,
// a clean close leaves one snapshot, and reopening recovers exactly the
// acknowledged state with the names in id order.
TEST(DurabilityTest, CleanCloseRecoversTheAcknowledgedState) {
  const std::string dir = FreshDir("clean");
  DurabilityOptions options;
  options.data_dir = dir;
  options.snapshot_every = 25;
  std::map<uint64_t, SubscriptionInput> want;
  {
    Recovery recovered;
    auto d = Durability::Open(options, &recovered);
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_TRUE(recovered.state.live.empty());
    (*d)->LogName(kAttributeName, 0, "price");
    (*d)->LogName(kAttributeName, 1, "kind");
    (*d)->LogName(kSubscriberName, 0, "alice");
    Driver driver(d->get());
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < 40; ++i) {
          driver.Subscribe(0, t % 2, 1 + i % 3);
          if (i % 10 == 9) driver.UnsubscribeSome(5);
        }
      });
    }
    for (std::thread& t : threads) t.join();
    driver.Sync();
    ASSERT_TRUE((*d)->Close().ok());
    EXPECT_GE((*d)->snapshots_taken(), 2u);  // at least one fold + close
    EXPECT_EQ((*d)->snapshot_failures(), 0u);
    want = driver.acked();
  }
  const std::vector<std::string> files = Files(dir);
  ASSERT_EQ(files.size(), 1u) << ::testing::PrintToString(files);
  EXPECT_TRUE(absl::StartsWith(files[0], "snapshot-")) << files[0];

  Recovery recovered;
  auto d = Durability::Open(options, &recovered);
  ASSERT_TRUE(d.ok()) << d.status();
  ExpectLive(recovered.state.live, want);
  EXPECT_THAT(recovered.state.attributes,
              ::testing::ElementsAre("price", "kind"));
  EXPECT_THAT(recovered.state.subscribers, ::testing::ElementsAre("alice"));
  EXPECT_EQ(recovered.records_replayed, 0u);  // all in the snapshot
}

// The newest journal's generation in `dir` (0 if none).
uint64_t NewestJournal(const std::string& dir) {
  uint64_t newest = 0;
  for (const std::string& name : Files(dir)) {
    if (absl::StartsWith(name, "journal-")) {
      newest = std::max<uint64_t>(newest, std::stoull(name.substr(8)));
    }
  }
  return newest;
}

// Subscribes `n` subscriptions one record each and returns how many folds
// ran, waiting after each record until every rotation so far is folded, so
// that each rotation decision sees the snapshot before it (as a load slower
// than the folds would).
uint64_t FoldsWhileSubscribing(const DurabilityOptions& options, int n,
                               uint64_t* live) {
  Recovery recovered;
  auto d = Durability::Open(options, &recovered);
  EXPECT_TRUE(d.ok()) << d.status();
  if (!d.ok()) return 0;
  const uint64_t first = NewestJournal(options.data_dir);
  if (recovered.state.subscribers.empty()) {  // two changes
    (*d)->LogName(kAttributeName, 0, "a");
    (*d)->LogName(kSubscriberName, 0, "s");
  }
  Driver driver(d->get(), recovered.state.next_id);
  for (int i = 0; i < n; ++i) {
    driver.Subscribe(0, 0, 1);
    driver.Sync();
    const uint64_t rotations = NewestJournal(options.data_dir) - first;
    for (int spin = 0; (*d)->snapshots_taken() < rotations; ++spin) {
      if (spin == 20000) {
        ADD_FAILURE() << "fold " << rotations << " never finished";
        return 0;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  const uint64_t folds = (*d)->snapshots_taken();
  *live = (*d)->snapshot_live();
  EXPECT_TRUE((*d)->Close().ok());
  return folds;
}

// --snapshot_growth_percent: with snapshots every 10 changes, two names
// and 320 subscriptions fold 32 times without it, and with 100% only when
// the journal holds as many changes as the last snapshot held
// subscriptions: with 8, 18, 36, 72, 144 and 288 live (each fold rewrites
// the live set, so the folds' work stays within twice the changes). A
// reopened directory starts from the live set it recovered.
TEST(DurabilityTest, SnapshotGrowthSpacesFoldsByTheLiveSet) {
  DurabilityOptions options;
  options.data_dir = FreshDir("growth_off");
  options.fsync = false;
  options.snapshot_every = 10;
  uint64_t live = 0;
  EXPECT_EQ(FoldsWhileSubscribing(options, 320, &live), 32u);
  EXPECT_EQ(live, 318u);

  options.data_dir = FreshDir("growth_on");
  options.snapshot_growth_percent = 100;
  EXPECT_EQ(FoldsWhileSubscribing(options, 320, &live), 6u);
  EXPECT_EQ(live, 288u);
  // Reopened with 320 live (Close folded the rest): the next fold waits
  // for 320 changes.
  EXPECT_EQ(FoldsWhileSubscribing(options, 319, &live), 0u);
  EXPECT_EQ(live, 320u);  // what recovery found; no fold since
  Recovery recovered;
  auto d = Durability::Open(options, &recovered);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(recovered.state.live.size(), 639u);
  EXPECT_EQ((*d)->snapshot_live(), 639u);
}

// Property: without a clean close (the process dies; simulated by leaving
// the files as the journal wrote them), recovery replays the journals and
// finds every acknowledged change.
TEST(DurabilityTest, RecoversFromJournalsWithoutAClose) {
  const std::string dir = FreshDir("crash");
  DurabilityOptions options;
  options.data_dir = dir;
  // No background folds: the copy below must not race with one deleting
  // files (store_test covers recovery across rotated generations).
  options.snapshot_every = 0;
  std::map<uint64_t, SubscriptionInput> want;
  {
    Recovery recovered;
    auto d = Durability::Open(options, &recovered);
    ASSERT_TRUE(d.ok()) << d.status();
    (*d)->LogName(kAttributeName, 0, "a");
    (*d)->LogName(kSubscriberName, 0, "s");
    Driver driver(d->get());
    for (int i = 0; i < 30; ++i) driver.Subscribe(0, 0, 2);
    driver.Sync();
    driver.UnsubscribeSome(3);
    want = driver.acked();
    EXPECT_EQ(want.size(), 40u);  // 60 subscribed, every third removed
    // Snapshot what the directory holds now, as a SIGKILL would leave it
    // (the last unsubscribe was acknowledged, so it is on disk).
    ASSERT_TRUE(CopyDir(dir, dir + ".copy"));
  }
  Recovery recovered;
  DurabilityOptions copy = options;
  copy.data_dir = dir + ".copy";
  auto d = Durability::Open(copy, &recovered);
  ASSERT_TRUE(d.ok()) << d.status();
  ExpectLive(recovered.state.live, want);
  EXPECT_GT(recovered.records_replayed, 0u);
}

// Cluster mode: rotations (and so snapshots) happen only right after a
// log position, and a copy taken between a change and its position recovers
// the state at the position before it.
TEST(DurabilityTest, LogPositionsKeepTheFilesAtALogPosition) {
  const std::string dir = FreshDir("positions");
  DurabilityOptions options;
  options.data_dir = dir;
  options.fsync = false;
  options.log_positions = true;
  options.snapshot_every = 3;  // many rotations, all at positions
  std::map<uint64_t, SubscriptionInput> at_position;
  {
    Recovery recovered;
    auto d = Durability::Open(options, &recovered);
    ASSERT_TRUE(d.ok()) << d.status();
    (*d)->LogName(kAttributeName, 0, "a");
    (*d)->LogName(kSubscriberName, 0, "s");
    Driver driver(d->get());
    for (uint64_t position = 1; position <= 40; ++position) {
      driver.Subscribe(0, 0, 2);  // 2 changes: would rotate mid-record
      driver.Sync();
      (*d)->LogPosition(position);
    }
    at_position = driver.acked();
    driver.Subscribe(0, 0, 5);  // applied, but its position never logged
    driver.Sync();
    ASSERT_TRUE(CopyDir(dir, dir + ".copy"));
  }
  // The clean close folded everything (the unmarked record too is gone:
  // its position was never reached).
  for (const std::string& d : {dir + ".copy", dir}) {
    DurabilityOptions reopen = options;
    reopen.data_dir = d;
    Recovery recovered;
    auto again = Durability::Open(reopen, &recovered);
    ASSERT_TRUE(again.ok()) << d << " " << again.status();
    EXPECT_EQ(recovered.state.log_position, 40u) << d;
    ExpectLive(recovered.state.live, at_position);
    EXPECT_EQ(recovered.state.next_id, 81u) << d;
  }
  // The clean close left one snapshot, which holds everything.
  const std::vector<std::string> files = Files(dir);
  EXPECT_EQ(std::count_if(files.begin(), files.end(),
                          [](const std::string& f) {
                            return absl::StartsWith(f, "snapshot-");
                          }),
            1);
}

TEST(DurabilityTest, BadDataDirectoriesAreClearErrors) {
  Recovery recovered;
  DurabilityOptions options;
  auto empty = Durability::Open(options, &recovered);
  EXPECT_TRUE(absl::IsInvalidArgument(empty.status()));

  options.data_dir = FreshDir("parent") + "/deeper/still";
  auto missing = Durability::Open(options, &recovered);
  EXPECT_TRUE(absl::IsNotFound(missing.status())) << missing.status();
  EXPECT_THAT(missing.status().message(), HasSubstr(options.data_dir));

  const std::string file = FreshDir("a_file");
  ASSERT_EQ(std::system(absl::StrCat("touch '", file, "'").c_str()), 0);
  options.data_dir = file;
  auto not_dir = Durability::Open(options, &recovered);
  EXPECT_FALSE(not_dir.ok());
  EXPECT_THAT(not_dir.status().message(), HasSubstr(file));

  const std::string damaged = FreshDir("damaged");
  ASSERT_EQ(mkdir(damaged.c_str(), 0755), 0);
  ASSERT_EQ(std::system(absl::StrCat("echo garbage > '", damaged,
                                     "/snapshot-3'").c_str()),
            0);
  options.data_dir = damaged;
  auto bad = Durability::Open(options, &recovered);
  EXPECT_TRUE(absl::IsDataLoss(bad.status())) << bad.status();
  EXPECT_THAT(bad.status().message(), HasSubstr("snapshot-3"));
}

}  // namespace
}  // namespace service
}  // namespace cohort
