#include "service/storage/durability.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <future>
#include <utility>

#include "absl/strings/str_cat.h"
#include "service/errno_status.h"
#include "service/release_memory.h"

namespace cohort {
namespace service {

absl::StatusOr<std::unique_ptr<Durability>> Durability::Open(
    const DurabilityOptions& options, Recovery* recovered) {
  if (options.data_dir.empty()) {
    return absl::InvalidArgumentError("--data_dir is empty");
  }
  if (mkdir(options.data_dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return ErrnoStatus(errno, absl::StrCat("cannot create ",
                                           options.data_dir));
  }
  absl::StatusOr<Recovery> r =
      Recover(options.data_dir, UINT64_MAX, options.log_positions);
  if (!r.ok()) return r.status();
  for (const std::string& path : r->obsolete) unlink(path.c_str());
  JournalOptions journal_options;
  journal_options.path =
      absl::StrCat(options.data_dir, "/", JournalName(r->journal_generation));
  journal_options.fsync = options.fsync;
  journal_options.group_max = options.group_max;
  journal_options.group_wait_us = options.group_wait_us;
  journal_options.use_io_uring = options.use_io_uring;
  absl::StatusOr<std::unique_ptr<Journal>> journal =
      Journal::Open(journal_options, r->journal_bytes);
  if (!journal.ok()) return journal.status();
  const uint64_t generation = r->journal_generation;
  const uint64_t live = r->state.live.size();
  *recovered = std::move(*r);
  return std::unique_ptr<Durability>(
      new Durability(options, generation, live, std::move(*journal)));
}

Durability::Durability(const DurabilityOptions& options, uint64_t generation,
                       uint64_t live, std::unique_ptr<Journal> journal)
    : options_(options),
      journal_(std::move(journal)),
      snapshot_live_(live),
      generation_(generation) {
  folder_ = std::thread([this] { RunFolds(); });
}

uint64_t Durability::RotationThreshold() const {
  if (options_.log_positions || options_.snapshot_growth_percent == 0) {
    return options_.snapshot_every;
  }
  return std::max(options_.snapshot_every,
                  snapshot_live_.load() *
                      options_.snapshot_growth_percent / 100);
}

Durability::~Durability() {
  // Owners that care about the outcome call Close themselves (Engine does);
  // a second Close returns the same status.
  Close().IgnoreError();
}

void Durability::LogName(RecordType type, uint32_t id,
                         absl::string_view name) {
  Log(type, EncodeName(id, name), 1, [](absl::Status) {});
}

void Durability::LogString(uint32_t attribute, int64_t code,
                           absl::string_view bytes) {
  Log(kStringValue, EncodeString(attribute, code, bytes), 1,
      [](absl::Status) {});
}

void Durability::LogSubscribe(uint64_t first_id,
                              absl::Span<const SubscriptionInput> subscriptions,
                              Journal::Done done) {
  Log(HasBranches(subscriptions) ? kSubscribeOr : kSubscribe,
      EncodeSubscribe(first_id, subscriptions),
      subscriptions.size(), std::move(done));
}

void Durability::LogUnsubscribe(absl::Span<const uint64_t> ids,
                                Journal::Done done) {
  Log(kUnsubscribe, EncodeUnsubscribe(ids), ids.size(), std::move(done));
}

absl::Status Durability::InstallSnapshot(absl::string_view snapshot) {
  uint64_t next;
  std::promise<absl::Status> rotated;
  {
    std::lock_guard<std::mutex> lock(log_mu_);
    next = ++generation_;
    changes_since_rotation_ = 0;
    journal_->Rotate(absl::StrCat(options_.data_dir, "/", JournalName(next)),
                     [&rotated](absl::Status s) { rotated.set_value(s); });
  }
  if (absl::Status s = rotated.get_future().get(); !s.ok()) return s;
  if (absl::Status s =
          WriteFileAtomically(options_.data_dir, SnapshotName(next), snapshot);
      !s.ok()) {
    return s;
  }
  RemoveGenerationsBefore(options_.data_dir, next);
  return absl::OkStatus();
}

void Durability::LogPosition(uint64_t position) {
  Log(kLogPosition, EncodeLogPosition(position), 0, [](absl::Status) {});
}

void Durability::Log(uint8_t type, std::string payload, uint64_t changes,
                     Journal::Done done) {
  std::lock_guard<std::mutex> lock(log_mu_);
  journal_->Append(type, std::move(payload), std::move(done));
  changes_since_rotation_ += changes;
  // With log positions, a journal ends right after a kLogPosition record.
  if (options_.log_positions && type != kLogPosition) return;
  if (options_.snapshot_every == 0 ||
      changes_since_rotation_ < RotationThreshold()) {
    return;
  }
  changes_since_rotation_ = 0;
  const uint64_t next = ++generation_;
  journal_->Rotate(
      absl::StrCat(options_.data_dir, "/", JournalName(next)),
      [this, next](absl::Status status) {
        if (!status.ok()) return;  // the journal has failed; nothing to fold
        std::lock_guard<std::mutex> fold_lock(fold_mu_);
        fold_to_ = next;
        fold_cv_.notify_one();
      });
}

void Durability::RunFolds() {
  for (;;) {
    uint64_t generation = 0;
    {
      std::unique_lock<std::mutex> lock(fold_mu_);
      fold_cv_.wait(lock, [this] { return fold_to_ != 0 || stopping_; });
      if (fold_to_ == 0) return;
      generation = fold_to_;
      fold_to_ = 0;
    }
    std::string written;
    uint64_t log_position = 0;
    absl::StatusOr<uint64_t> folded =
        TakeSnapshot(options_.data_dir, generation, options_.log_positions,
                     options_.on_snapshot ? &written : nullptr,
                     &log_position);
    if (folded.ok() && options_.on_snapshot && !written.empty()) {
      options_.on_snapshot(log_position, std::move(written));
    }
    // A fold holds every live subscription in memory for a moment (several
    // times the index's size); the allocator keeps freed memory (tcmalloc
    // in its page heap, glibc in this thread's arena), so without this the
    // process grows by the largest fold so far.
    ReleaseFreeMemory();
    if (folded.ok()) {
      snapshot_live_.store(*folded);
      ++snapshots_taken_;
    } else {
      ++snapshot_failures_;
      std::fprintf(stderr, "cohortd: snapshot failed: %s\n",
                   folded.status().ToString().c_str());
    }
  }
}

absl::Status Durability::Close() {
  if (closed_) return close_status_;
  closed_ = true;
  journal_->Close();
  {
    std::lock_guard<std::mutex> lock(fold_mu_);
    stopping_ = true;
    fold_cv_.notify_one();
  }
  if (folder_.joinable()) folder_.join();  // finishes a pending fold first
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(log_mu_);
    generation = generation_;
  }
  absl::StatusOr<uint64_t> folded =
      TakeSnapshot(options_.data_dir, generation + 1, options_.log_positions);
  if (folded.ok()) {
    ++snapshots_taken_;
  } else {
    ++snapshot_failures_;
    close_status_ = folded.status();
  }
  return close_status_;
}

}  // namespace service
}  // namespace cohort
