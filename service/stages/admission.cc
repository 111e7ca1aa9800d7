#include "service/stages/admission.h"

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace cohort {
namespace service {

absl::Status Admission::TooLarge(uint64_t n) const {
  return absl::ResourceExhaustedError(
      absl::StrCat("events: ", n,
                   " events in one request (a JSON event counts once per "
                   "combination of its arrays) can never be admitted; the "
                   "server holds at most ", limit_,
                   " events in flight (--queue_limit); send smaller batches"));
}

bool Admission::Fits(uint64_t n) const {
  // n <= limit_ here. Nothing in flight always fits, so an adaptive limit
  // below one request only serializes requests.
  return in_flight_ == 0 || in_flight_ + n <= adaptive_limit_;
}

absl::Status Admission::RoomFor(uint64_t n) const {
  if (shutdown_) return ShuttingDownError();
  if (!waiters_.empty() || !Fits(n)) {
    if (target_ns_ > 0) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "overloaded: ", in_flight_, " events in flight, the limit is ",
          adaptive_limit_,
          " (adapted to --latency_target_us=", target_ns_ / 1000,
          ", at most --queue_limit=", limit_, "); retry with backoff"));
    }
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
    } else if (waiters_.empty() && Fits(n)) {
      in_flight_ += n;
    } else {
      waiters_.push_back(Waiter{n, std::move(done)});
      return;
    }
  }
  done(status);
}

void Admission::Adapt(uint64_t n, int64_t now_ns, int64_t min_sojourn_ns) {
  if (target_ns_ <= 0 || now_ns <= 0) return;
  if (interval_start_ns_ == 0) {
    // The first measured release opens the first interval; an interval
    // counts the releases after its start, up to and including its end.
    interval_start_ns_ = now_ns;
    interval_released_ = 0;
    interval_min_sojourn_ns_ = std::numeric_limits<int64_t>::max();
    return;
  }
  interval_released_ += n;
  interval_min_sojourn_ns_ = std::min(interval_min_sojourn_ns_, min_sojourn_ns);
  const int64_t elapsed = now_ns - interval_start_ns_;
  if (elapsed < kTargetInterval) return;
  if (interval_min_sojourn_ns_ > target_ns_) {
    // Little's law at the throughput of a saturated interval.
    const double per_s = static_cast<double>(interval_released_) * 1e9 /
                         static_cast<double>(elapsed);
    const double fit = per_s * static_cast<double>(target_ns_) / 1e9;
    adaptive_limit_ =
        std::clamp<uint64_t>(static_cast<uint64_t>(fit), 1, limit_);
  } else {
    adaptive_limit_ = std::min(
        limit_,
        std::max(adaptive_limit_ + 1, adaptive_limit_ + adaptive_limit_ / 4));
  }
  interval_start_ns_ = now_ns;
  interval_released_ = 0;
  interval_min_sojourn_ns_ = std::numeric_limits<int64_t>::max();
}

void Admission::Release(uint64_t n, int64_t now_ns, int64_t min_sojourn_ns) {
  std::vector<Callback> admitted;
  {
    std::lock_guard<std::mutex> lock(mu_);
    in_flight_ -= n;
    Adapt(n, now_ns, min_sojourn_ns);
    while (!waiters_.empty() && Fits(waiters_.front().n)) {
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

uint64_t Admission::current_limit() const {
  std::lock_guard<std::mutex> lock(mu_);
  return adaptive_limit_;
}

uint64_t Admission::in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_flight_;
}

}  // namespace service
}  // namespace cohort
