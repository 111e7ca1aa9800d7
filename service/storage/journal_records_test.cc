#include "service/storage/journal_records.h"

#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "matcher/types.h"

namespace cohort {
namespace service {
namespace {

using ::testing::HasSubstr;

std::vector<SubscriptionInput> Sample() {
  std::vector<SubscriptionInput> subs(3);
  subs[0].subscriber = 7;
  subs[0].predicates = {{1, matcher::Op::kEq, 42, 0},
                        {3, matcher::Op::kBetween, -5, INT64_MAX}};
  subs[1].subscriber = 0;
  subs[1].predicates = {{0, matcher::Op::kLt, INT64_MIN, 0}};
  subs[2].subscriber = UINT32_MAX;
  subs[2].predicates = {{UINT32_MAX, matcher::Op::kGe, -1, 0},
                        {2, matcher::Op::kNe, 0, 0},
                        {2, matcher::Op::kLe, 9, 0}};
  // Format version 2: sets and existence.
  subs.emplace_back();
  subs[3].subscriber = 7;
  subs[3].predicates = {{4, matcher::Op::kIn, 0, 0, {INT64_MIN, 3, 3}},
                        {5, matcher::Op::kNotExists, 0, 0},
                        {6, matcher::Op::kNotIn, 0, 0, {-1}},
                        {7, matcher::Op::kExists, 0, 0}};
  return subs;
}

void ExpectSame(const std::vector<SubscriptionInput>& a,
                const std::vector<SubscriptionInput>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].subscriber, b[i].subscriber) << i;
    EXPECT_EQ(a[i].predicates, b[i].predicates) << i;
    EXPECT_EQ(a[i].branches, b[i].branches) << i;
  }
}

// Sample() and two "or" subscriptions (format version 3).
std::vector<SubscriptionInput> SampleWithBranches() {
  std::vector<SubscriptionInput> subs = Sample();
  SubscriptionInput a;
  a.subscriber = 3;
  a.branches = {{{1, matcher::Op::kEq, 1, 0}},
                {{1, matcher::Op::kEq, 2, 0}, {9, matcher::Op::kExists, 0, 0}},
                {{2, matcher::Op::kNotIn, 0, 0, {5, INT64_MIN}}}};
  subs.insert(subs.begin() + 1, a);
  SubscriptionInput b;
  b.subscriber = 4;
  b.branches = {{{0, matcher::Op::kLt, 0, 0}}, {{0, matcher::Op::kGt, 9, 0}}};
  subs.push_back(b);
  return subs;
}

TEST(JournalRecordsTest, SubscribeWithBranchesRoundTrips) {
  const std::vector<SubscriptionInput> subs = SampleWithBranches();
  ASSERT_TRUE(HasBranches(subs));
  ASSERT_FALSE(HasBranches(Sample()));
  SubscribeRecord record;
  ASSERT_TRUE(
      DecodeSubscribe(kSubscribeOr, EncodeSubscribe(77, subs), &record).ok());
  EXPECT_EQ(record.first_id, 77u);
  ExpectSame(record.subscriptions, subs);
  // The plain ones stay plain (one conjunction, in `predicates`).
  EXPECT_TRUE(record.subscriptions[0].branches.empty());
  EXPECT_EQ(record.subscriptions[1].branches.size(), 3u);
}

TEST(JournalRecordsTest, DamagedSubscribeOrIsDataLoss) {
  const std::string payload = EncodeSubscribe(5, SampleWithBranches());
  SubscribeRecord s;
  for (size_t cut = 0; cut < payload.size(); ++cut) {
    absl::Status status =
        DecodeSubscribe(kSubscribeOr, payload.substr(0, cut), &s);
    EXPECT_TRUE(absl::IsDataLoss(status)) << cut;
  }
  EXPECT_TRUE(
      absl::IsDataLoss(DecodeSubscribe(kSubscribeOr, payload + "x", &s)));
  // Zero conjunctions: the uint32 after the first subscriber id.
  std::string zero = payload;
  zero[12 + 4] = zero[12 + 5] = zero[12 + 6] = zero[12 + 7] = 0;
  absl::Status status = DecodeSubscribe(kSubscribeOr, zero, &s);
  EXPECT_THAT(status.message(), HasSubstr("subscribe or record"));
  EXPECT_THAT(status.message(), HasSubstr("0 conjunctions"));
  // Read as the plain form, the same bytes do not decode either.
  EXPECT_TRUE(absl::IsDataLoss(DecodeSubscribe(kSubscribe, payload, &s)));
}

TEST(JournalRecordsTest, SubscribeRoundTrips) {
  const std::vector<SubscriptionInput> subs = Sample();
  SubscribeRecord record;
  ASSERT_TRUE(DecodeSubscribe(kSubscribe,
                              EncodeSubscribe(123456789012ull, subs), &record)
                  .ok());
  EXPECT_EQ(record.first_id, 123456789012ull);
  ExpectSame(record.subscriptions, subs);
}

TEST(JournalRecordsTest, StringValueRoundTrips) {
  StringRecord record;
  const std::string bytes("a\0\xff", 3);
  ASSERT_TRUE(DecodeString(EncodeString(12, INT64_MIN, bytes), &record).ok());
  EXPECT_EQ(record.attribute, 12u);
  EXPECT_EQ(record.code, INT64_MIN);
  EXPECT_EQ(record.bytes, std::string("a\0\xff", 3));
  const std::string whole = EncodeString(1, 2, "xyz");
  for (size_t cut = 0; cut < whole.size(); ++cut) {
    EXPECT_TRUE(absl::IsDataLoss(DecodeString(whole.substr(0, cut), &record)))
        << cut;
  }
  EXPECT_TRUE(absl::IsDataLoss(DecodeString(whole + "x", &record)));
  EXPECT_EQ(RecordTypeName(kStringValue), "string value");
}

TEST(JournalRecordsTest, NameAndUnsubscribeRoundTrip) {
  NameRecord name;
  ASSERT_TRUE(
      DecodeName(kAttributeName, EncodeName(99, std::string("p\0x", 3)), &name)
          .ok());
  EXPECT_EQ(name.id, 99u);
  EXPECT_EQ(name.name, std::string("p\0x", 3));
  ASSERT_TRUE(DecodeName(kSubscriberName, EncodeName(0, ""), &name).ok());
  EXPECT_EQ(name.name, "");

  const std::vector<uint64_t> ids = {1, UINT64_MAX, 5};
  std::vector<uint64_t> back;
  ASSERT_TRUE(DecodeUnsubscribe(EncodeUnsubscribe(ids), &back).ok());
  EXPECT_EQ(back, ids);
  ASSERT_TRUE(DecodeUnsubscribe(EncodeUnsubscribe({}), &back).ok());
  EXPECT_TRUE(back.empty());
}

// Property: every strict prefix, and every payload with a byte appended,
// is rejected with DATA_LOSS naming the record kind.
TEST(JournalRecordsTest, TruncatedOrExtendedPayloadsAreDataLoss) {
  const std::string subscribe = EncodeSubscribe(1, Sample());
  const std::string name = EncodeName(3, "price");
  const std::string unsubscribe = EncodeUnsubscribe({4, 5});
  SubscribeRecord s;
  NameRecord n;
  std::vector<uint64_t> u;
  for (size_t cut = 0; cut < subscribe.size(); ++cut) {
    absl::Status status =
        DecodeSubscribe(kSubscribe, subscribe.substr(0, cut), &s);
    ASSERT_TRUE(absl::IsDataLoss(status)) << cut << " " << status;
    EXPECT_THAT(status.message(), HasSubstr("subscribe record"));
  }
  for (size_t cut = 0; cut < name.size(); ++cut) {
    absl::Status status = DecodeName(kSubscriberName, name.substr(0, cut), &n);
    ASSERT_TRUE(absl::IsDataLoss(status)) << cut;
    EXPECT_THAT(status.message(), HasSubstr("subscriber name record"));
  }
  for (size_t cut = 0; cut < unsubscribe.size(); ++cut) {
    ASSERT_TRUE(absl::IsDataLoss(DecodeUnsubscribe(unsubscribe.substr(0, cut),
                                                   &u)))
        << cut;
  }
  EXPECT_TRUE(
      absl::IsDataLoss(DecodeSubscribe(kSubscribe, subscribe + "x", &s)));
  EXPECT_TRUE(absl::IsDataLoss(DecodeName(kAttributeName, name + "x", &n)));
  EXPECT_TRUE(absl::IsDataLoss(DecodeUnsubscribe(unsubscribe + "x", &u)));
}

TEST(JournalRecordsTest, ImpossibleValuesAreDataLoss) {
  std::vector<SubscriptionInput> subs = Sample();
  std::string bad_op = EncodeSubscribe(1, subs);
  SubscribeRecord s;
  absl::Status status;
  // 10 is the API's OP_PREFIX, which the matcher never sees; 13 is past
  // the last.
  for (char op : {0, 10, 13}) {
    bad_op[8 + 4 + 4 + 4 + 4] = op;  // first predicate's op
    status = DecodeSubscribe(kSubscribe, bad_op, &s);
    EXPECT_TRUE(absl::IsDataLoss(status));
    EXPECT_THAT(status.message(),
                HasSubstr(absl::StrCat("unknown operator ", int{op})));
  }

  // A set of 0 values, and one whose count runs past the payload.
  std::vector<SubscriptionInput> sets(1);
  sets[0].predicates = {{1, matcher::Op::kIn, 0, 0, {5}}};
  std::string set = EncodeSubscribe(1, sets);
  set[8 + 4 + 4 + 4 + 4 + 1] = 0;  // the count's low byte
  status = DecodeSubscribe(kSubscribe, set, &s);
  EXPECT_THAT(status.message(), HasSubstr("a set of 0 values"));
  set[8 + 4 + 4 + 4 + 4 + 1] = 2;
  status = DecodeSubscribe(kSubscribe, set, &s);
  EXPECT_THAT(status.message(), HasSubstr("a set of 2 values"));

  subs[1].predicates.clear();
  status = DecodeSubscribe(kSubscribe, EncodeSubscribe(1, subs), &s);
  EXPECT_THAT(status.message(), HasSubstr("without predicates"));

  status = DecodeSubscribe(kSubscribe, EncodeSubscribe(0, Sample()), &s);
  EXPECT_THAT(status.message(), HasSubstr("first id 0"));

  std::string huge = EncodeUnsubscribe({1});
  huge[3] = 0x7f;  // count ~2^31 with 8 bytes left
  std::vector<uint64_t> u;
  status = DecodeUnsubscribe(huge, &u);
  EXPECT_THAT(status.message(), HasSubstr("count too large"));
  EXPECT_EQ(RecordTypeName(42), "unknown record type 42");
}

// Property: random bytes never crash a decoder (run under asan in test.sh).
TEST(JournalRecordsTest, RandomBytesNeverCrash) {
  std::mt19937_64 rng(11);
  SubscribeRecord s;
  NameRecord n;
  std::vector<uint64_t> u;
  for (int trial = 0; trial < 2000; ++trial) {
    std::string data(rng() % 80, '\0');
    for (char& c : data) c = static_cast<char>(rng());
    (void)DecodeSubscribe(kSubscribe, data, &s);
    (void)DecodeName(kAttributeName, data, &n);
    (void)DecodeUnsubscribe(data, &u);
  }
}

}  // namespace
}  // namespace service
}  // namespace cohort
