#include "service/stages/subscription_directory.h"

#include "absl/strings/str_cat.h"

namespace cohort {
namespace service {

SubscriptionDirectory::SubscriptionDirectory(uint32_t partitions,
                                             uint64_t max_local_id)
    : partitions_(partitions), max_ids_((max_local_id + 1) * partitions) {}

absl::StatusOr<uint64_t> SubscriptionDirectory::Assign(uint64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  if (n > max_ids_ - assigned_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "subscriptions: the id space is used up (", assigned_, " of ",
        max_ids_, " ids assigned); restart the service to reset it"));
  }
  const uint64_t first = assigned_ + 1;
  assigned_ += n;
  live_bits_.resize((assigned_ + 63) / 64, 0);
  for (uint64_t i = first - 1; i < assigned_; ++i) {
    live_bits_[i / 64] |= uint64_t{1} << (i % 64);
  }
  live_ += n;
  return first;
}

absl::Status SubscriptionDirectory::Restore(
    uint64_t next_id, absl::Span<const uint64_t> live_ids) {
  std::lock_guard<std::mutex> lock(mu_);
  if (assigned_ != 0) {
    return absl::InvalidArgumentError(
        "subscription directory: restore after ids were assigned");
  }
  if (next_id == 0 || next_id - 1 > max_ids_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "subscription directory: next id ", next_id, " outside 1..",
        max_ids_ + 1));
  }
  std::vector<uint64_t> bits((next_id - 1 + 63) / 64, 0);
  for (uint64_t id : live_ids) {
    if (id == 0 || id >= next_id) {
      return absl::InvalidArgumentError(absl::StrCat(
          "subscription directory: live id ", id, " not below next id ",
          next_id));
    }
    uint64_t& word = bits[(id - 1) / 64];
    const uint64_t bit = uint64_t{1} << ((id - 1) % 64);
    if (word & bit) {
      return absl::InvalidArgumentError(
          absl::StrCat("subscription directory: live id ", id, " twice"));
    }
    word |= bit;
  }
  assigned_ = next_id - 1;
  live_bits_ = std::move(bits);
  live_ = live_ids.size();
  return absl::OkStatus();
}

bool SubscriptionDirectory::IsLive(uint64_t id) const {
  if (id == 0 || id > assigned_) return false;
  return (live_bits_[(id - 1) / 64] >> ((id - 1) % 64)) & 1;
}

absl::Status SubscriptionDirectory::Kill(absl::Span<const uint64_t> ids) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!IsLive(ids[i])) {
      return absl::NotFoundError(
          absl::StrCat("subscription_ids[", i, "]: ", ids[i],
                       " is not a live subscription; nothing was removed"));
    }
  }
  for (uint64_t id : ids) {
    live_bits_[(id - 1) / 64] &= ~(uint64_t{1} << ((id - 1) % 64));
  }
  live_ -= ids.size();
  return absl::OkStatus();
}

void SubscriptionDirectory::Forget(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!IsLive(id)) return;
  live_bits_[(id - 1) / 64] &= ~(uint64_t{1} << ((id - 1) % 64));
  --live_;
}

uint64_t SubscriptionDirectory::live() const {
  std::lock_guard<std::mutex> lock(mu_);
  return live_;
}

}  // namespace service
}  // namespace cohort
