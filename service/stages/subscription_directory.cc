#include "service/stages/subscription_directory.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace cohort {
namespace service {

SubscriptionDirectory::SubscriptionDirectory(uint32_t partitions,
                                             uint64_t max_local_id,
                                             uint32_t max_branch_id)
    : partitions_(partitions),
      max_ids_((max_local_id + 1) * partitions),
      max_branches_(max_branch_id - kFirstBranchId + 1),
      pages_(std::make_unique<std::atomic<BranchEntry*>[]>(branch_pages())) {
  for (uint32_t i = 0; i < branch_pages(); ++i) {
    pages_[i].store(nullptr, std::memory_order_relaxed);
  }
}

SubscriptionDirectory::~SubscriptionDirectory() {
  for (uint32_t i = 0; i < branch_pages(); ++i) {
    delete[] pages_[i].load(std::memory_order_relaxed);
  }
}

absl::StatusOr<std::vector<uint32_t>> SubscriptionDirectory::AssignBranches(
    uint64_t id, uint32_t subscriber, size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  if (n > free_branches_.size() + (max_branches_ - next_branch_)) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "subscriptions: the matcher rows of \"or\" subscriptions are used "
        "up (", max_branches_ - free_branches_.size(), " of ", max_branches_,
        " in use); unsubscribe some"));
  }
  std::vector<uint32_t> ids;
  ids.reserve(n);
  while (ids.size() < n && !free_branches_.empty()) {
    ids.push_back(free_branches_.back());
    free_branches_.pop_back();
  }
  while (ids.size() < n) {
    const uint32_t i = next_branch_++;
    std::atomic<BranchEntry*>& page = pages_[i >> kBranchPageBits];
    if (page.load(std::memory_order_relaxed) == nullptr) {
      page.store(new BranchEntry[kBranchPageSize], std::memory_order_relaxed);
    }
    ids.push_back(kFirstBranchId + i);
  }
  std::sort(ids.begin(), ids.end());
  for (uint32_t branch : ids) {
    BranchEntry& entry = MutableEntry(branch);
    entry.owner.store(id, std::memory_order_relaxed);
    entry.subscriber.store(subscriber, std::memory_order_relaxed);
  }
  branches_of_[id] = ids;
  branches_live_.fetch_add(n, std::memory_order_relaxed);
  return ids;
}

std::vector<uint32_t> SubscriptionDirectory::BranchesOf(uint64_t id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = branches_of_.find(id);
  return it == branches_of_.end() ? std::vector<uint32_t>() : it->second;
}

void SubscriptionDirectory::ReleaseBranches(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = branches_of_.find(id);
  if (it == branches_of_.end()) return;
  for (uint32_t branch : it->second) {
    BranchEntry& entry = MutableEntry(branch);
    entry.owner.store(0, std::memory_order_relaxed);
    free_branches_.push_back(branch);
  }
  branches_live_.fetch_sub(it->second.size(), std::memory_order_relaxed);
  branches_of_.erase(it);
}

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
