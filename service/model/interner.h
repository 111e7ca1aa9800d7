// An append-only dictionary from names to dense uint32 ids 0, 1, 2, ...
//
// The front stage interns attribute names (docs/DESIGN.md section 1) and
// subscriber names with it, so that the partition stages and the reply stage
// work with small integers instead of strings. An id, once assigned, names the
// same string for the life of the Interner: ids are never reused or removed.
// Lookups vastly outnumber insertions (every published event looks up each of
// its attribute names; only subscriptions add names), so reads share a lock.
//
// Thread safety: every method may be called from any thread, concurrently with
// any other. Reads (`Find`, `FindAll`, `Name`, `size`) take a shared lock;
// `Intern` takes it shared to look the name up and exclusively only to add it.
// Nothing returned refers to the Interner's memory.
//
// Invariants: the ids in use are exactly 0 .. size() - 1; size() <= max_size().
#ifndef COHORT_SERVICE_MODEL_INTERNER_H_
#define COHORT_SERVICE_MODEL_INTERNER_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <shared_mutex>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace cohort {
namespace service {

class Interner {
 public:
  // Creates an empty dictionary that holds at most `max_size` names. A
  // `max_size` above 2^32 (more names than uint32 ids) is lowered to 2^32.
  explicit Interner(size_t max_size);

  Interner(const Interner&) = delete;
  Interner& operator=(const Interner&) = delete;

  // Intern()
  //
  // Returns the id of `name`, adding it with the next id (size() before the
  // call) if it is new. Fails with RESOURCE_EXHAUSTED, naming the limit, if
  // `name` is new and the dictionary already holds max_size() names; names
  // already present are still found when it is full. Any string is accepted,
  // the empty one included; callers validate names first.
  absl::StatusOr<uint32_t> Intern(absl::string_view name);

  // Find()
  //
  // Returns the id of `name`, or nullopt if it was never interned.
  std::optional<uint32_t> Find(absl::string_view name) const;

  // FindAll()
  //
  // Sets ids[i] = Find(names[i]) for every i, under one shared lock (cheaper
  // than one Find per name for the many attributes of a published batch).
  // REQUIRES: ids.size() == names.size().
  void FindAll(absl::Span<const absl::string_view> names,
               absl::Span<std::optional<uint32_t>> ids) const;

  // Name()
  //
  // Returns the name with id `id`, or "" if `id` >= size().
  std::string Name(uint32_t id) const;

  // Number of names interned so far; ids are 0 .. size() - 1.
  size_t size() const;

  // The most names this dictionary will hold.
  size_t max_size() const { return max_size_; }

  // Calls `hook(id, name)` each time Intern adds a name, under the
  // exclusive lock, so calls come in id order (the journal relies on it).
  // The hook must not block or call back into this Interner.
  // REQUIRES: called before the Interner is shared between threads.
  void SetOnNewName(std::function<void(uint32_t, absl::string_view)> hook) {
    on_new_name_ = std::move(hook);
  }

 private:
  const size_t max_size_;
  std::function<void(uint32_t, absl::string_view)> on_new_name_;

  mutable std::shared_mutex mu_;
  // names_[id] is the name with that id. A deque, so that appending never
  // moves existing strings: the keys of `ids_` point into them.
  std::deque<std::string> names_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<absl::string_view, uint32_t> ids_ ABSL_GUARDED_BY(mu_);
};

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_MODEL_INTERNER_H_
