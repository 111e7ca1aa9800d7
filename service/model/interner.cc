#include "service/model/interner.h"

#include <algorithm>
#include <mutex>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace cohort {
namespace service {
namespace {

// Ids are uint32, so no dictionary can hold more names than there are ids.
constexpr size_t kMaxIds = size_t{1} << 32;

}  // namespace

Interner::Interner(size_t max_size) : max_size_(std::min(max_size, kMaxIds)) {}

absl::StatusOr<uint32_t> Interner::Intern(absl::string_view name) {
  // Almost every name is already present: try under the shared lock first so
  // that concurrent interning of known names does not serialise.
  if (std::optional<uint32_t> id = Find(name)) return *id;

  std::unique_lock<std::shared_mutex> lock(mu_);
  // Another thread may have added `name` between the two locks.
  auto it = ids_.find(name);
  if (it != ids_.end()) return it->second;
  if (names_.size() >= max_size_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("dictionary full: ", names_.size(),
                     " names; the limit is ", max_size_));
  }
  const uint32_t id = static_cast<uint32_t>(names_.size());
  names_.emplace_back(name);
  ids_.emplace(names_.back(), id);
  if (on_new_name_) on_new_name_(id, names_.back());
  return id;
}

std::optional<uint32_t> Interner::Find(absl::string_view name) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  auto it = ids_.find(name);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

void Interner::FindAll(absl::Span<const absl::string_view> names,
                       absl::Span<std::optional<uint32_t>> ids) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  const size_t n = std::min(names.size(), ids.size());
  for (size_t i = 0; i < n; ++i) {
    auto it = ids_.find(names[i]);
    ids[i] =
        it == ids_.end() ? std::nullopt : std::optional<uint32_t>(it->second);
  }
}

std::string Interner::Name(uint32_t id) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  if (id >= names_.size()) return std::string();
  return names_[id];
}

size_t Interner::size() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  return names_.size();
}

}  // namespace service
}  // namespace cohort
