// Admission control for published events (DESIGN.md section 5).
//
// Every published event is admitted by the front stage before it is queued
// and released by the stage that finishes it (the reply stage, or a worker in
// threaded mode). At most `limit` events are admitted at once, so every queue
// an admitted event passes through (each partition's inbound queue, the reply
// queue) holds at most `limit` events, and the memory held by events in
// flight is bounded by `limit` times the largest event.
//
// Unary publishes use `TryAcquire` and fail fast with RESOURCE_EXHAUSTED.
// Streams use `AcquireOrWait`: a stream whose request does not fit waits in a
// FIFO (one request per stream at most, since a stream stops reading while it
// waits) and is admitted by the `Release` that makes room, so a stream is
// slowed by gRPC flow control rather than failed. Waiting streams are served
// before new unary publishes, so a steady unary load cannot starve them.
//
// Thread safety: all methods may be called from any thread. Callbacks run on
// the thread that calls AcquireOrWait, Release or Shutdown, with no lock held.
#ifndef COHORT_SERVICE_ADMISSION_H_
#define COHORT_SERVICE_ADMISSION_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"

namespace cohort {
namespace service {

// The status every stage returns once shutdown has begun.
inline absl::Status ShuttingDownError() {
  return absl::UnavailableError("the server is shutting down");
}

class Admission {
 public:
  // Called once with OK when the events were admitted, or with the reason
  // they never will be (UNAVAILABLE at shutdown).
  using Callback = std::function<void(absl::Status)>;

  explicit Admission(uint64_t limit) : limit_(limit) {}
  Admission(const Admission&) = delete;
  Admission& operator=(const Admission&) = delete;

  // Admits `n` events if they fit and no stream is waiting. Errors:
  // RESOURCE_EXHAUSTED if n > limit (never fits) or there is no room now;
  // UNAVAILABLE after Shutdown.
  absl::Status TryAcquire(uint64_t n);

  // What TryAcquire(n) would answer now, without admitting anything (OK if
  // n > limit: that request is refused later, after validation): lets the
  // front stage refuse a request before spending work on it. Room may be
  // gone by the time TryAcquire is called.
  absl::Status CheckRoom(uint64_t n) const;

  // Admits `n` events now or when room is made; `done` is called exactly
  // once (possibly before this returns). RESOURCE_EXHAUSTED at once if
  // n > limit.
  void AcquireOrWait(uint64_t n, Callback done);

  // Returns `n` admitted events and admits waiting streams that now fit.
  void Release(uint64_t n);

  // Fails every waiter and every later acquisition with UNAVAILABLE.
  void Shutdown();

  uint64_t limit() const { return limit_; }
  uint64_t in_flight() const;

 private:
  struct Waiter {
    uint64_t n;
    Callback done;
  };

  absl::Status TooLarge(uint64_t n) const;
  absl::Status RoomFor(uint64_t n) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const uint64_t limit_;
  mutable std::mutex mu_;
  uint64_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<Waiter> waiters_ ABSL_GUARDED_BY(mu_);
};

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_ADMISSION_H_
