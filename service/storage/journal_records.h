// The journal's record kinds and their payload encodings (inside the frames
// of journal_frame.h). All integers are little endian; names are a uint32
// length and the bytes.
//
//   kAttributeName   uint32 id, name     the attribute Interner added a name
//   kSubscriberName  uint32 id, name     the subscriber Interner added a name
//   kSubscribe       uint64 first id, uint32 n, then n subscriptions with
//                    ids first, first + 1, ...: uint32 subscriber id,
//                    uint32 m, then m predicates: uint32 attribute id,
//                    uint8 op, int64 value, int64 upper
//   kUnsubscribe     uint32 n, then n uint64 ids
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
#include "service/api/validation.h"

namespace cohort {
namespace service {

enum RecordType : uint8_t {
  kAttributeName = 1,
  kSubscriberName = 2,
  kSubscribe = 3,
  kUnsubscribe = 4,
};

// "attribute name", "subscriber name", "subscribe", "unsubscribe", or
// "unknown record type N".
std::string RecordTypeName(uint8_t type);

struct NameRecord {
  uint32_t id = 0;
  std::string name;
};

struct SubscribeRecord {
  uint64_t first_id = 0;
  std::vector<SubscriptionInput> subscriptions;
};

std::string EncodeName(uint32_t id, absl::string_view name);
std::string EncodeSubscribe(uint64_t first_id,
                            absl::Span<const SubscriptionInput> subscriptions);
std::string EncodeUnsubscribe(absl::Span<const uint64_t> ids);

// `type` is kAttributeName or kSubscriberName (for the message).
absl::Status DecodeName(uint8_t type, absl::string_view payload,
                        NameRecord* out);
absl::Status DecodeSubscribe(absl::string_view payload, SubscribeRecord* out);
absl::Status DecodeUnsubscribe(absl::string_view payload,
                               std::vector<uint64_t>* out);

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_STORAGE_JOURNAL_RECORDS_H_
