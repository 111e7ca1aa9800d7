// The journal's record kinds and their payload encodings (inside the frames
// of journal_frame.h). All integers are little endian; names are a uint32
// length and the bytes.
//
//   kAttributeName   uint32 id, name     the attribute Interner added a name
//   kSubscriberName  uint32 id, name     the subscriber Interner added a name
//   kSubscribe       uint64 first id, uint32 n, then n subscriptions with
//                    ids first, first + 1, ...: uint32 subscriber id,
//                    uint32 m, then m predicates: uint32 attribute id,
//                    uint8 op, int64 value, int64 upper; for IN and NOT_IN
//                    (ops 8, 9) value is the count k >= 1 of the set, upper
//                    0, and k int64 values follow
//   kSubscribeOr     as kSubscribe, but after each subscriber id a uint32
//                    b >= 1, the subscription's conjunctions, then b times
//                    m and m predicates: an "or" subscription's branches
//                    (SubscriptionInput::branches; b = 1 a plain one);
//                    written instead of kSubscribe for a batch with an
//                    "or" subscription in it
//   kUnsubscribe     uint32 n, then n uint64 ids
//   kStringValue     uint32 attribute id, int64 code, uint32 length, bytes:
//                    TypedAttributes added a string with that code
//   kLogPosition     uint64 position: cluster mode only (docs/DESIGN.md
//                    section 11.8): every record before it reflects the
//                    subscription log up to and including that position
//
// Format versions: version 1 (before issue 19) had ops 1 to 7 only and no
// kStringValue records; version 2 adds ops 8, 9, 11 and 12 (the matcher's IN,
// NOT_IN, EXISTS, NOT_EXISTS) and kStringValue; version 3 (issue 44) adds
// kSubscribeOr. A reader reads every older version unchanged
// (e2e/format_test.sh keeps a data directory of each to prove it). String
// records, like names, are written when the string is added, under
// TypedAttributes' lock, so they precede every subscription that uses their
// code.
//
// Name records are written when the name is interned, under the interner's
// lock, so they reach the journal in id order and always before a
// subscription that uses the id; replaying them in file order with
// Interner::Intern gives every name its old id.
//
// Decoders check every length against the payload and every op against the
// matcher's operators; a payload that does not decode is DATA_LOSS naming
// the record kind and what was wrong (a checksummed frame that fails to
// decode means a bug or a format change, never a torn write).
#ifndef COHORT_SERVICE_STORAGE_JOURNAL_RECORDS_H_
#define COHORT_SERVICE_STORAGE_JOURNAL_RECORDS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "service/model/subscription_input.h"

namespace cohort {
namespace service {

enum RecordType : uint8_t {
  kAttributeName = 1,
  kSubscriberName = 2,
  kSubscribe = 3,
  kUnsubscribe = 4,
  kStringValue = 5,
  kLogPosition = 6,
  kSubscribeOr = 7,
};

// "attribute name", "subscriber name", "subscribe", "unsubscribe", "string
// value", or "unknown record type N".
std::string RecordTypeName(uint8_t type);

struct NameRecord {
  uint32_t id = 0;
  std::string name;
};

struct StringRecord {
  uint32_t attribute = 0;
  int64_t code = 0;
  std::string bytes;
};

struct SubscribeRecord {
  uint64_t first_id = 0;
  std::vector<SubscriptionInput> subscriptions;
};

std::string EncodeName(uint32_t id, absl::string_view name);
// Whether a subscription of `subscriptions` has branches: then
// EncodeSubscribe writes the kSubscribeOr form, else the kSubscribe one.
bool HasBranches(absl::Span<const SubscriptionInput> subscriptions);
std::string EncodeSubscribe(uint64_t first_id,
                            absl::Span<const SubscriptionInput> subscriptions);
std::string EncodeUnsubscribe(absl::Span<const uint64_t> ids);
std::string EncodeString(uint32_t attribute, int64_t code,
                         absl::string_view bytes);
std::string EncodeLogPosition(uint64_t position);

// `type` is kAttributeName or kSubscriberName (for the message).
absl::Status DecodeName(uint8_t type, absl::string_view payload,
                        NameRecord* out);
// `type` is kSubscribe or kSubscribeOr, the form of `payload`.
absl::Status DecodeSubscribe(uint8_t type, absl::string_view payload,
                             SubscribeRecord* out);
absl::Status DecodeUnsubscribe(absl::string_view payload,
                               std::vector<uint64_t>* out);
absl::Status DecodeString(absl::string_view payload, StringRecord* out);
absl::Status DecodeLogPosition(absl::string_view payload, uint64_t* out);

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_STORAGE_JOURNAL_RECORDS_H_
