#include "service/admission.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace cohort {
namespace service {

absl::Status Admission::TooLarge(uint64_t n) const {
  return absl::ResourceExhaustedError(
      absl::StrCat("events: ", n, " events in one request can never be "
                   "admitted; the server holds at most ", limit_,
                   " events in flight (--queue_limit); send smaller batches"));
}

absl::Status Admission::RoomFor(uint64_t n) const {
  if (shutdown_) return ShuttingDownError();
  if (!waiters_.empty() || in_flight_ + n > limit_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "overloaded: ", in_flight_, " of ", limit_,
        " events in flight (--queue_limit); retry with backoff"));
  }
  return absl::OkStatus();
}

absl::Status Admission::TryAcquire(uint64_t n) {
  if (n > limit_) return TooLarge(n);
  std::lock_guard<std::mutex> lock(mu_);
  absl::Status status = RoomFor(n);
  if (status.ok()) in_flight_ += n;
  return status;
}

absl::Status Admission::CheckRoom(uint64_t n) const {
  // Too large a request is left to validation and TryAcquire, whose
  // answers (INVALID_ARGUMENT over --max_batch, else RESOURCE_EXHAUSTED
  // "can never be admitted") tell the client what to change.
  if (n > limit_) return absl::OkStatus();
  std::lock_guard<std::mutex> lock(mu_);
  return RoomFor(n);
}

void Admission::AcquireOrWait(uint64_t n, Callback done) {
  if (n > limit_) {
    done(TooLarge(n));
    return;
  }
  absl::Status status;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shutdown_) {
      status = ShuttingDownError();
    } else if (waiters_.empty() && in_flight_ + n <= limit_) {
      in_flight_ += n;
    } else {
      waiters_.push_back(Waiter{n, std::move(done)});
      return;
    }
  }
  done(status);
}

void Admission::Release(uint64_t n) {
  std::vector<Callback> admitted;
  {
    std::lock_guard<std::mutex> lock(mu_);
    in_flight_ -= n;
    while (!waiters_.empty() && in_flight_ + waiters_.front().n <= limit_) {
      in_flight_ += waiters_.front().n;
      admitted.push_back(std::move(waiters_.front().done));
      waiters_.pop_front();
    }
  }
  for (Callback& done : admitted) done(absl::OkStatus());
}

void Admission::Shutdown() {
  std::deque<Waiter> waiters;
  {
    std::lock_guard<std::mutex> lock(mu_);
    shutdown_ = true;
    waiters.swap(waiters_);
  }
  for (Waiter& w : waiters) {
    w.done(ShuttingDownError());
  }
}

uint64_t Admission::in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_flight_;
}

}  // namespace service
}  // namespace cohort
