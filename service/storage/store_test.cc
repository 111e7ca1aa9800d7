#include "service/storage/store.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "matcher/types.h"
#include "service/storage/journal_records.h"

namespace cohort {
namespace service {
namespace {

using ::testing::HasSubstr;

std::string NewDir(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = absl::StrCat(tmp ? tmp : "/tmp", "/store_", name);
  std::string cmd = absl::StrCat("rm -rf '", dir, "'");
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_EQ(mkdir(dir.c_str(), 0755), 0);
  return dir;
}

void WriteFile(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

SubscriptionInput Sub(uint32_t subscriber, uint32_t attribute, int64_t v) {
  SubscriptionInput s;
  s.subscriber = subscriber;
  s.predicates = {{attribute, matcher::Op::kEq, v, 0},
                  {attribute, matcher::Op::kBetween, v - 3, v + 3}};
  return s;
}

void ExpectSameState(const StoreState& a, const StoreState& b) {
  EXPECT_EQ(a.attributes, b.attributes);
  EXPECT_EQ(a.subscribers, b.subscribers);
  EXPECT_EQ(a.next_id, b.next_id);
  ASSERT_EQ(a.live.size(), b.live.size());
  for (auto ia = a.live.begin(), ib = b.live.begin(); ia != a.live.end();
       ++ia, ++ib) {
    EXPECT_EQ(ia->first, ib->first);
    EXPECT_EQ(ia->second.subscriber, ib->second.subscriber);
    EXPECT_EQ(ia->second.predicates, ib->second.predicates);
    EXPECT_EQ(ia->second.branches, ib->second.branches);
  }
}

// An "or" subscription of `n` branches (format version 3).
SubscriptionInput OrSub(uint32_t subscriber, uint32_t attribute, int64_t v,
                        int n) {
  SubscriptionInput s;
  s.subscriber = subscriber;
  for (int b = 0; b < n; ++b) {
    s.branches.push_back({{attribute, matcher::Op::kEq, v + b, 0}});
    if (b % 2 == 1) {
      s.branches.back().push_back({attribute, matcher::Op::kIn, 0, 0, {v, -b}});
    }
  }
  return s;
}

// A random history, as journal frames, with the state it must produce.
struct History {
  std::vector<std::string> frames;  // one encoded frame each
  StoreState state;
};

History RandomHistory(uint64_t seed, int steps) {
  std::mt19937_64 rng(seed);
  History h;
  auto add = [&](uint8_t type, const std::string& payload) {
    std::string frame;
    AppendFrame(type, payload, &frame);
    h.frames.push_back(frame);
    FrameReader reader(h.frames.back());
    Frame f;
    EXPECT_TRUE(reader.Next(&f));
    EXPECT_TRUE(h.state.Apply(f).ok());
  };
  for (int step = 0; step < steps; ++step) {
    const int what = static_cast<int>(rng() % 10);
    if (what == 0 || h.state.attributes.empty()) {
      add(kAttributeName,
          EncodeName(static_cast<uint32_t>(h.state.attributes.size()),
                     absl::StrCat("a", h.state.attributes.size())));
    } else if (what == 1 || h.state.subscribers.empty()) {
      add(kSubscriberName,
          EncodeName(static_cast<uint32_t>(h.state.subscribers.size()),
                     absl::StrCat("s", h.state.subscribers.size())));
    } else if (what < 7 || h.state.live.empty()) {
      std::vector<SubscriptionInput> subs;
      const int n = 1 + static_cast<int>(rng() % 6);
      for (int i = 0; i < n; ++i) {
        const uint32_t subscriber = rng() % h.state.subscribers.size();
        const uint32_t attribute = rng() % h.state.attributes.size();
        const int64_t v = static_cast<int64_t>(rng() % 100);
        subs.push_back(rng() % 4 == 0
                           ? OrSub(subscriber, attribute, v,
                                   2 + static_cast<int>(rng() % 4))
                           : Sub(subscriber, attribute, v));
      }
      const uint64_t first = h.state.next_id + rng() % 3;  // gaps happen
      add(HasBranches(subs) ? kSubscribeOr : kSubscribe,
          EncodeSubscribe(first, subs));
    } else {
      std::vector<uint64_t> ids;
      for (const auto& [id, s] : h.state.live) {
        if (rng() % 3 == 0) ids.push_back(id);
      }
      add(kUnsubscribe, EncodeUnsubscribe(ids));
    }
  }
  return h;
}

TEST(StoreStateTest, RecordsThatContradictTheStateAreDataLoss) {
  StoreState state;
  auto apply = [&](uint8_t type, const std::string& payload) {
    std::string bytes;
    AppendFrame(type, payload, &bytes);
    FrameReader reader(bytes);
    Frame f;
    EXPECT_TRUE(reader.Next(&f));
    return state.Apply(f);
  };
  EXPECT_THAT(apply(kAttributeName, EncodeName(1, "x")).message(),
              HasSubstr("id 1 out of order (expected 0)"));
  ASSERT_TRUE(apply(kAttributeName, EncodeName(0, "price")).ok());
  ASSERT_TRUE(apply(kSubscriberName, EncodeName(0, "alice")).ok());
  EXPECT_THAT(apply(kSubscribe, EncodeSubscribe(1, {Sub(0, 1, 5)})).message(),
              HasSubstr("unknown attribute id 1"));
  EXPECT_THAT(apply(kSubscribe, EncodeSubscribe(1, {Sub(3, 0, 5)})).message(),
              HasSubstr("unknown subscriber id 3"));
  ASSERT_TRUE(apply(kSubscribe, EncodeSubscribe(1, {Sub(0, 0, 5)})).ok());
  EXPECT_THAT(apply(kSubscribe, EncodeSubscribe(1, {Sub(0, 0, 5)})).message(),
              HasSubstr("subscription id 1 reused"));
  EXPECT_THAT(apply(kUnsubscribe, EncodeUnsubscribe({2})).message(),
              HasSubstr("subscription id 2 is not live"));
  EXPECT_TRUE(apply(kUnsubscribe, EncodeUnsubscribe({1})).ok());
  EXPECT_TRUE(state.live.empty());
  EXPECT_EQ(state.next_id, 2u);
  absl::Status unknown = apply(77, "");
  EXPECT_TRUE(absl::IsDataLoss(unknown));
  EXPECT_THAT(unknown.message(), HasSubstr("unknown record type 77"));
}

TEST(SnapshotTest, RoundTripsRandomStates) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const History h = RandomHistory(seed, 200);
    StoreState back;
    ASSERT_TRUE(DecodeSnapshot(EncodeSnapshot(h.state), &back).ok()) << seed;
    ExpectSameState(back, h.state);
  }
  StoreState empty, back;
  ASSERT_TRUE(DecodeSnapshot(EncodeSnapshot(empty), &back).ok());
  ExpectSameState(back, empty);
}

TEST(SnapshotTest, OrSubscriptionsNeedVersionThree) {
  StoreState state;
  state.attributes = {"a"};
  state.subscribers = {"s"};
  state.live.emplace(1, OrSub(0, 0, 5, 3));
  state.live.emplace(2, Sub(0, 0, 5));
  state.next_id = 3;
  StoreState back;
  ASSERT_TRUE(DecodeSnapshot(EncodeSnapshot(state), &back).ok());
  ExpectSameState(back, state);
  ASSERT_EQ(back.live.at(1).branches.size(), 3u);
  // The same frames under a version 2 header are damage.
  auto snapshot = [&](uint32_t version) {
    std::string out, header, end;
    PutFixed32(version, &header);
    PutFixed64(2, &header);
    AppendFrame(kSnapshotHeader, header, &out);
    AppendFrame(kAttributeName, EncodeName(0, "a"), &out);
    AppendFrame(kSubscriberName, EncodeName(0, "s"), &out);
    std::vector<SubscriptionInput> run = {OrSub(0, 0, 5, 2)};
    AppendFrame(kSnapshotOrSubscriptions, EncodeSubscribe(1, run), &out);
    PutFixed64(1, &end);
    AppendFrame(kSnapshotEnd, end, &out);
    return out;
  };
  ASSERT_TRUE(DecodeSnapshot(snapshot(3), &back).ok());
  EXPECT_EQ(back.live.at(1).branches.size(), 2u);
  absl::Status old = DecodeSnapshot(snapshot(2), &back);
  EXPECT_TRUE(absl::IsDataLoss(old));
  EXPECT_THAT(old.message(), HasSubstr("in a version 2 snapshot"));
}

// Property: every truncation of a snapshot is DATA_LOSS (a snapshot is
// renamed into place whole, so a short one is damage, never a crash).
TEST(SnapshotTest, EveryTruncationIsDataLoss) {
  const std::string data = EncodeSnapshot(RandomHistory(5, 60).state);
  StoreState state;
  for (size_t cut = 0; cut < data.size(); ++cut) {
    absl::Status s = DecodeSnapshot(data.substr(0, cut), &state);
    ASSERT_TRUE(absl::IsDataLoss(s)) << cut << " " << s;
  }
  EXPECT_THAT(DecodeSnapshot("hello", &state).message(),
              HasSubstr("not a snapshot"));
  EXPECT_THAT(DecodeSnapshot(data + "x", &state).message(),
              HasSubstr("after its end frame"));
}

TEST(RecoverTest, EmptyAndMissingDirectories) {
  const std::string dir = NewDir("empty");
  absl::StatusOr<Recovery> r = Recover(dir);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->journal_generation, 1u);
  EXPECT_EQ(r->journal_bytes, 0u);
  EXPECT_EQ(r->snapshot_generation, 0u);
  EXPECT_TRUE(r->state.live.empty());
  EXPECT_EQ(r->state.next_id, 1u);

  absl::StatusOr<Recovery> missing = Recover(dir + "/nope");
  EXPECT_TRUE(absl::IsNotFound(missing.status())) << missing.status();
  EXPECT_THAT(missing.status().message(), HasSubstr(dir + "/nope"));
}

// Property: any split of a random history into snapshot-<g> (the state of
// a prefix) and journals after it, with a torn tail on the newest journal,
// recovers the state of exactly the whole frames, and reports the discarded
// bytes and where appending resumes.
TEST(RecoverTest, SnapshotPlusJournalsPlusTornTailGiveTheState) {
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    const History h = RandomHistory(seed, 120);
    std::mt19937_64 rng(seed);
    const std::string dir = NewDir(absl::StrCat("split", seed));
    const size_t snap_at = rng() % h.frames.size();
    const size_t mid = snap_at + rng() % (h.frames.size() - snap_at + 1);
    StoreState prefix;
    for (size_t i = 0; i < snap_at; ++i) {
      FrameReader reader(h.frames[i]);
      Frame f;
      ASSERT_TRUE(reader.Next(&f));
      ASSERT_TRUE(prefix.Apply(f).ok());
    }
    // An obsolete older generation that recovery must ignore.
    WriteFile(dir + "/" + SnapshotName(2), "garbage, superseded");
    WriteFile(dir + "/" + JournalName(2), "garbage, superseded");
    ASSERT_TRUE(
        WriteFileAtomically(dir, SnapshotName(3), EncodeSnapshot(prefix))
            .ok());
    std::string j3, j4;
    for (size_t i = snap_at; i < mid; ++i) j3 += h.frames[i];
    for (size_t i = mid; i < h.frames.size(); ++i) j4 += h.frames[i];
    std::string torn;
    AppendFrame(kSubscribe, EncodeSubscribe(h.state.next_id, {Sub(0, 0, 1)}),
                &torn);
    torn.resize(torn.size() - 1 - rng() % 5);
    WriteFile(dir + "/" + JournalName(3), j3);
    WriteFile(dir + "/" + JournalName(4), j4 + torn);

    absl::StatusOr<Recovery> r = Recover(dir);
    ASSERT_TRUE(r.ok()) << seed << " " << r.status();
    ExpectSameState(r->state, h.state);
    EXPECT_EQ(r->snapshot_generation, 3u);
    EXPECT_EQ(r->journal_generation, 4u);
    EXPECT_EQ(r->journal_bytes, j4.size());
    EXPECT_EQ(r->bytes_discarded, torn.size());
    EXPECT_EQ(r->tail, "torn");
    EXPECT_EQ(r->records_replayed, h.frames.size() - snap_at);
    EXPECT_THAT(r->obsolete,
                ::testing::UnorderedElementsAre(dir + "/" + SnapshotName(2),
                                                dir + "/" + JournalName(2)));
  }
}

// Cluster mode: a kLogPosition record closes each log record's changes.
// Property: whatever a journal holds after its last position record (a log
// record applied halfway when the process died) is neither applied nor
// kept, and the state is exactly the history up to the last position.
TEST(RecoverTest, LogPositionsDropWhatFollowsTheLastMarker) {
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    const History h = RandomHistory(seed, 120);
    std::mt19937_64 rng(seed * 7);
    const std::string dir = NewDir(absl::StrCat("positions", seed));
    // Markers after random frames; the state and the bytes at each marker.
    std::vector<std::string> frames;  // with the markers
    std::vector<size_t> marker_at;    // index in `frames` of each marker
    StoreState at_marker, running;
    uint64_t position = 0;
    for (const std::string& frame : h.frames) {
      frames.push_back(frame);
      FrameReader reader(frame);
      Frame f;
      ASSERT_TRUE(reader.Next(&f));
      ASSERT_TRUE(running.Apply(f).ok());
      if (rng() % 3 == 0) {
        position += 1 + rng() % 4;  // rejected log records mark nothing
        std::string marker;
        AppendFrame(kLogPosition, EncodeLogPosition(position), &marker);
        frames.push_back(marker);
        marker_at.push_back(frames.size() - 1);
        running.log_position = position;
        at_marker = running;
      }
    }
    ASSERT_GE(marker_at.size(), 3u) << seed;
    // snapshot-3 at the first marker, journal-3 up to a middle marker,
    // journal-4 the rest (ending unmarked unless the last frame was one).
    const size_t snap = marker_at[0] + 1;
    const size_t mid = marker_at[marker_at.size() / 2] + 1;
    StoreState prefix;
    for (size_t i = 0; i < snap; ++i) {
      FrameReader reader(frames[i]);
      Frame f;
      ASSERT_TRUE(reader.Next(&f));
      ASSERT_TRUE(prefix.Apply(f).ok());
    }
    ASSERT_TRUE(
        WriteFileAtomically(dir, SnapshotName(3), EncodeSnapshot(prefix))
            .ok());
    std::string j3, j4;
    for (size_t i = snap; i < mid; ++i) j3 += frames[i];
    size_t unmarked_from = 0;
    for (size_t i = mid; i < frames.size(); ++i) {
      if (i == marker_at.back() + 1) unmarked_from = j4.size();
      j4 += frames[i];
    }
    if (marker_at.back() + 1 == frames.size()) unmarked_from = j4.size();
    WriteFile(dir + "/" + JournalName(3), j3);
    WriteFile(dir + "/" + JournalName(4), j4);

    absl::StatusOr<Recovery> r = Recover(dir, UINT64_MAX, true);
    ASSERT_TRUE(r.ok()) << seed << " " << r.status();
    ExpectSameState(r->state, at_marker);
    EXPECT_EQ(r->state.log_position, at_marker.log_position);
    EXPECT_EQ(r->journal_bytes, unmarked_from);
    EXPECT_EQ(r->unmarked_bytes, j4.size() - unmarked_from);
    EXPECT_EQ(r->unmarked_records, frames.size() - marker_at.back() - 1);
    EXPECT_EQ(r->bytes_discarded, 0u);
    // Without log positions (single node) every record counts.
    absl::StatusOr<Recovery> all = Recover(dir);
    ASSERT_TRUE(all.ok()) << all.status();
    ExpectSameState(all->state, h.state);

    // A journal that is not the newest never ends unmarked.
    if (marker_at.back() + 1 < frames.size()) {
      WriteFile(dir + "/" + JournalName(5), "");
      absl::StatusOr<Recovery> bad = Recover(dir, UINT64_MAX, true);
      ASSERT_TRUE(absl::IsDataLoss(bad.status())) << bad.status();
      EXPECT_THAT(bad.status().message(),
                  HasSubstr("records after its last log position record"));
    }
  }
}

TEST(StoreStateTest, LogPositionsOnlyIncrease) {
  StoreState state;
  auto apply = [&](uint64_t position) {
    std::string bytes;
    AppendFrame(kLogPosition, EncodeLogPosition(position), &bytes);
    FrameReader reader(bytes);
    Frame f;
    EXPECT_TRUE(reader.Next(&f));
    return state.Apply(f);
  };
  ASSERT_TRUE(apply(5).ok());
  EXPECT_EQ(state.log_position, 5u);
  EXPECT_THAT(apply(5).message(), HasSubstr("position 5 after position 5"));
  EXPECT_TRUE(apply(9).ok());
  EXPECT_EQ(state.log_position, 9u);
}

TEST(SnapshotTest, CarriesTheLogPosition) {
  StoreState state = RandomHistory(3, 50).state;
  state.log_position = 12345;
  StoreState back;
  const std::string data = EncodeSnapshot(state);
  ASSERT_TRUE(DecodeSnapshot(data, &back).ok());
  ExpectSameState(back, state);
  EXPECT_EQ(back.log_position, 12345u);
  // A single node's snapshot has no position frame at all: the same bytes
  // as before cluster mode.
  state.log_position = 0;
  const std::string single = EncodeSnapshot(state);
  EXPECT_LT(single.size(), data.size());
  ASSERT_TRUE(DecodeSnapshot(single, &back).ok());
  EXPECT_EQ(back.log_position, 0u);
  // A position frame anywhere but after the header is damage.
  std::string frame;
  AppendFrame(kSnapshotLogPosition, EncodeLogPosition(7), &frame);
  FrameReader reader(single);
  Frame f;
  ASSERT_TRUE(reader.Next(&f));  // the header
  ASSERT_TRUE(reader.Next(&f));  // the first name
  const size_t after_first = reader.valid_bytes();
  const std::string misplaced = single.substr(0, after_first) + frame + single.substr(after_first);
  EXPECT_THAT(DecodeSnapshot(misplaced, &back).message(),
              HasSubstr("log position frame out of place"));
}

TEST(RecoverTest, DamageIsAClearError) {
  const History h = RandomHistory(9, 80);
  std::string all;
  for (const std::string& f : h.frames) all += f;

  {  // A truncated snapshot.
    const std::string dir = NewDir("truncated_snapshot");
    const std::string snap = EncodeSnapshot(h.state);
    WriteFile(dir + "/" + SnapshotName(1), snap.substr(0, snap.size() / 2));
    absl::StatusOr<Recovery> r = Recover(dir);
    EXPECT_TRUE(absl::IsDataLoss(r.status())) << r.status();
    EXPECT_THAT(r.status().message(), HasSubstr(SnapshotName(1)));
  }
  {  // A flipped byte in an older journal.
    const std::string dir = NewDir("flipped");
    std::string bad = all;
    bad[bad.size() / 2] ^= 0x40;
    WriteFile(dir + "/" + JournalName(1), bad);
    WriteFile(dir + "/" + JournalName(2), "");
    absl::StatusOr<Recovery> r = Recover(dir);
    EXPECT_TRUE(absl::IsDataLoss(r.status())) << r.status();
    EXPECT_THAT(r.status().message(), HasSubstr("not the newest"));
  }
  {  // The same flip in the newest journal: a clean stop, bytes reported.
    const std::string dir = NewDir("flipped_newest");
    std::string bad = all;
    bad[bad.size() / 2] ^= 0x40;
    WriteFile(dir + "/" + JournalName(1), bad);
    absl::StatusOr<Recovery> r = Recover(dir);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->tail, "corrupt");
    EXPECT_GT(r->bytes_discarded, 0u);
    EXPECT_EQ(r->journal_bytes + r->bytes_discarded, bad.size());
  }
  {  // A missing journal between two others.
    const std::string dir = NewDir("gap");
    WriteFile(dir + "/" + JournalName(1), all);
    WriteFile(dir + "/" + JournalName(3), "");
    absl::StatusOr<Recovery> r = Recover(dir);
    EXPECT_TRUE(absl::IsDataLoss(r.status()));
    EXPECT_THAT(r.status().message(), HasSubstr("journal-2 is missing"));
  }
  {  // A journal of a later generation without the snapshot it continues.
    const std::string dir = NewDir("no_snapshot");
    WriteFile(dir + "/" + JournalName(2), all);
    absl::StatusOr<Recovery> r = Recover(dir);
    EXPECT_TRUE(absl::IsDataLoss(r.status())) << r.status();
    EXPECT_THAT(r.status().message(),
                HasSubstr("snapshot-2 is missing before journal-2"));
  }
}

// Property: folding journals 1..g-1 into snapshot-<g> while journal-<g>
// exists changes nothing a recovery sees, and removes the folded files.
TEST(TakeSnapshotTest, FoldsOlderGenerationsAndKeepsTheState) {
  const History h = RandomHistory(21, 150);
  const std::string dir = NewDir("fold");
  std::string j1, j2, j3;
  for (size_t i = 0; i < h.frames.size(); ++i) {
    (i < 50 ? j1 : i < 100 ? j2 : j3) += h.frames[i];
  }
  WriteFile(dir + "/" + JournalName(1), j1);
  WriteFile(dir + "/" + JournalName(2), j2);
  WriteFile(dir + "/" + JournalName(3), j3);
  absl::StatusOr<uint64_t> written = TakeSnapshot(dir, 3);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(access((dir + "/" + JournalName(1)).c_str(), F_OK), -1);
  EXPECT_EQ(access((dir + "/" + JournalName(2)).c_str(), F_OK), -1);
  EXPECT_EQ(access((dir + "/" + SnapshotName(3)).c_str(), F_OK), 0);
  absl::StatusOr<Recovery> r = Recover(dir);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectSameState(r->state, h.state);
  EXPECT_EQ(r->snapshot_generation, 3u);
  EXPECT_EQ(r->records_replayed, h.frames.size() - 100);

  // Folding again at the next generation, with journal-4 not yet created.
  written = TakeSnapshot(dir, 4);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(*written, h.state.live.size());
  EXPECT_EQ(access((dir + "/" + SnapshotName(3)).c_str(), F_OK), -1);
  EXPECT_EQ(access((dir + "/" + JournalName(3)).c_str(), F_OK), -1);
  r = Recover(dir);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectSameState(r->state, h.state);
  EXPECT_EQ(r->journal_generation, 4u);
  EXPECT_EQ(r->journal_bytes, 0u);
}

// A single node's fold copies the snapshot's untouched subscription frames
// as bytes (FoldSnapshot); the cluster's (asked for the bytes it writes)
// decodes and encodes every subscription. Over random histories cut into
// journals at random, folded one generation at a time as the server does
// (many unsubscribes of ids in the snapshot's frames, "or" runs, gaps in
// ids), both give the history's state after every fold.
TEST(TakeSnapshotTest, CopyingFoldAgreesWithTheDecodingFold) {
  for (uint64_t seed = 0; seed < 40; ++seed) {
    const History h = RandomHistory(seed, 300);
    const std::string copying = NewDir("fold_copy");
    const std::string decoding = NewDir("fold_decode");
    std::mt19937_64 rng(seed);
    size_t at = 0;
    StoreState want;
    for (uint64_t g = 1; at < h.frames.size(); ++g) {
      std::string journal;
      const size_t end =
          std::min(h.frames.size(), at + 1 + static_cast<size_t>(rng() % 60));
      for (; at < end; ++at) {
        journal += h.frames[at];
        FrameReader reader(h.frames[at]);
        Frame f;
        ASSERT_TRUE(reader.Next(&f));
        ASSERT_TRUE(want.Apply(f).ok());
      }
      WriteFile(copying + "/" + JournalName(g), journal);
      WriteFile(decoding + "/" + JournalName(g), journal);
      absl::StatusOr<uint64_t> copied = TakeSnapshot(copying, g + 1);
      std::string written;
      absl::StatusOr<uint64_t> decoded =
          TakeSnapshot(decoding, g + 1, false, &written);
      ASSERT_TRUE(copied.ok()) << seed << " " << copied.status();
      ASSERT_TRUE(decoded.ok()) << seed << " " << decoded.status();
      EXPECT_EQ(*copied, want.live.size()) << seed << " " << g;
      EXPECT_EQ(*decoded, want.live.size()) << seed << " " << g;
      absl::StatusOr<Recovery> a = Recover(copying);
      absl::StatusOr<Recovery> b = Recover(decoding);
      ASSERT_TRUE(a.ok()) << seed << " " << a.status();
      ASSERT_TRUE(b.ok()) << seed << " " << b.status();
      EXPECT_EQ(a->snapshot_generation, g + 1);
      EXPECT_EQ(a->records_replayed, 0u);
      ExpectSameState(a->state, want);
      ExpectSameState(b->state, want);
      if (::testing::Test::HasFailure()) return;
    }
  }
}

// The copying fold checks the journals' unsubscribes against the
// snapshot's frames: an id in none of them, or unsubscribed twice, is
// DATA_LOSS (as recovery says), and nothing is folded.
TEST(TakeSnapshotTest, CopyingFoldRefusesUnsubscribesOfIdsNotLive) {
  StoreState state;
  state.attributes = {"a"};
  state.subscribers = {"s"};
  for (uint64_t id = 1; id <= 5; ++id) state.live[id] = Sub(0, 0, 7);
  for (uint64_t id = 8; id <= 9; ++id) state.live[id] = Sub(0, 0, 8);
  state.next_id = 10;
  for (const std::vector<uint64_t>& ids :
       {std::vector<uint64_t>{6}, std::vector<uint64_t>{10},
        std::vector<uint64_t>{3, 3}, std::vector<uint64_t>{0}}) {
    const std::string dir = NewDir("fold_not_live");
    WriteFile(dir + "/" + SnapshotName(2), EncodeSnapshot(state));
    std::string journal;
    AppendFrame(kUnsubscribe, EncodeUnsubscribe(ids), &journal);
    WriteFile(dir + "/" + JournalName(2), journal);
    absl::StatusOr<uint64_t> folded = TakeSnapshot(dir, 3);
    EXPECT_TRUE(absl::IsDataLoss(folded.status())) << folded.status();
    EXPECT_THAT(folded.status().message(), HasSubstr("is not live"));
    EXPECT_EQ(access((dir + "/" + SnapshotName(3)).c_str(), F_OK), -1);
  }
  // And the same journal with ids that are live folds to the state less
  // them.
  const std::string dir = NewDir("fold_live");
  WriteFile(dir + "/" + SnapshotName(2), EncodeSnapshot(state));
  std::string journal;
  AppendFrame(kUnsubscribe, EncodeUnsubscribe({3, 9}), &journal);
  WriteFile(dir + "/" + JournalName(2), journal);
  absl::StatusOr<uint64_t> folded = TakeSnapshot(dir, 3);
  ASSERT_TRUE(folded.ok()) << folded.status();
  EXPECT_EQ(*folded, 5u);
  absl::StatusOr<Recovery> r = Recover(dir);
  ASSERT_TRUE(r.ok()) << r.status();
  state.live.erase(3);
  state.live.erase(9);
  ExpectSameState(r->state, state);
}

TEST(TakeSnapshotTest, RefusesToFoldADamagedJournal) {
  const std::string dir = NewDir("fold_damaged");
  const History h = RandomHistory(4, 20);
  std::string j1;
  for (const std::string& f : h.frames) j1 += f;
  WriteFile(dir + "/" + JournalName(1), j1 + "torn");
  absl::StatusOr<uint64_t> written = TakeSnapshot(dir, 2);
  EXPECT_TRUE(absl::IsDataLoss(written.status())) << written.status();
  EXPECT_THAT(written.status().message(), HasSubstr("not folding"));
  EXPECT_EQ(access((dir + "/" + JournalName(1)).c_str(), F_OK), 0);
}

// AtomicFileWriter: pieces smaller and larger than its 1 MiB buffer make
// the file in order; a writer dropped before Commit leaves neither the
// file nor its .tmp; a failure is Commit's status.
TEST(AtomicFileWriterTest, StreamsPiecesAndLeavesNothingUncommitted) {
  const std::string dir = NewDir("writer");
  std::mt19937_64 rng(5);
  std::string want;
  {
    AtomicFileWriter writer(dir, "f");
    for (int i = 0; i < 40; ++i) {
      const size_t n = i % 7 == 0 ? (size_t{1} << 20) + rng() % 5000
                                  : rng() % 70000;
      std::string piece(n, '\0');
      for (char& c : piece) c = static_cast<char>('a' + rng() % 26);
      writer.Append(piece);
      want += piece;
    }
    EXPECT_NE(access((dir + "/f.tmp").c_str(), F_OK), -1);
    EXPECT_EQ(access((dir + "/f").c_str(), F_OK), -1);
    ASSERT_TRUE(writer.Commit().ok());
  }
  EXPECT_EQ(ReadFile(dir + "/f"), want);
  EXPECT_EQ(access((dir + "/f.tmp").c_str(), F_OK), -1);
  {
    AtomicFileWriter dropped(dir, "g");
    dropped.Append("never committed");
  }
  EXPECT_EQ(access((dir + "/g").c_str(), F_OK), -1);
  EXPECT_EQ(access((dir + "/g.tmp").c_str(), F_OK), -1);
  AtomicFileWriter failing(dir + "/missing", "h");
  failing.Append("x");
  const absl::Status s = failing.Commit();
  EXPECT_TRUE(absl::IsNotFound(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr(dir + "/missing/h.tmp"));
}

TEST(WriteFileAtomicallyTest, WritesWholeFilesAndNamesFailures) {
  const std::string dir = NewDir("atomic");
  ASSERT_TRUE(WriteFileAtomically(dir, "f", "hello").ok());
  EXPECT_EQ(ReadFile(dir + "/f"), "hello");
  EXPECT_NE(access((dir + "/f.tmp").c_str(), F_OK), 0);
  ASSERT_TRUE(WriteFileAtomically(dir, "f", "again").ok());
  EXPECT_EQ(ReadFile(dir + "/f"), "again");
  absl::Status s = WriteFileAtomically(dir + "/missing", "f", "x");
  EXPECT_TRUE(absl::IsNotFound(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr(dir + "/missing/f.tmp"));
}

}  // namespace
}  // namespace service
}  // namespace cohort
