// Admission control for published events (docs/DESIGN.md section 5).
//
// Every published event is admitted by the front stage before it is queued
// and released by the stage that finishes it (the reply stage, or a worker in
// threaded mode), just before its answer goes out, so that a client holding
// its answer finds the room. At most `limit` events are admitted at once, so
// every queue an admitted event passes through (each partition's inbound
// queue, the reply queue) holds at most `limit` events, and the memory held
// by events in flight is bounded by `limit` times the largest event, plus
// the one event each finishing thread is answering.
//
// Unary publishes use `TryAcquire` and fail fast with RESOURCE_EXHAUSTED.
// Streams use `AcquireOrWait`: a stream whose request does not fit waits in a
// FIFO (one request per stream at most, since a stream stops reading while it
// waits) and is admitted by the `Release` that makes room, so a stream is
// slowed by gRPC flow control rather than failed. Waiting streams are served
// before new unary publishes, so a steady unary load cannot starve them.
//
// Latency target (optional, `latency_target_ns` > 0): a fixed limit bounds
// memory, but how long an admitted event waits depends on how fast the
// server drains it, which varies with cohort sizes, listeners and whatever
// else takes the CPU. With a target, the limit adapts so that admitted events
// are answered within about the target, in the spirit of CoDel (Nichols and
// Jacobson): every Release reports the shortest time from admission to answer
// among the events it returns, and per interval (kTargetInterval) of
// releases,
//   - if even the shortest exceeded the target, a standing queue has formed:
//     the limit becomes the events released per second in that interval
//     times the target (Little's law: in flight = throughput x latency);
//   - otherwise it grows by a quarter, back up to `limit`.
// A request is always admitted when nothing is in flight, so a limit below
// one request cannot stop progress. Without a target the limit is `limit`.
//
// Thread safety: all methods may be called from any thread. Callbacks run on
// the thread that calls AcquireOrWait, Release or Shutdown, with no lock held.
#ifndef COHORT_SERVICE_STAGES_ADMISSION_H_
#define COHORT_SERVICE_STAGES_ADMISSION_H_

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

  // How often the adaptive limit is reconsidered (CoDel's interval).
  static constexpr int64_t kTargetInterval = 100'000'000;  // ns

  // `limit`: the most events in flight; `latency_target_ns`: 0 for a fixed
  // limit, else the target above.
  explicit Admission(uint64_t limit, int64_t latency_target_ns = 0)
      : limit_(limit), target_ns_(latency_target_ns), adaptive_limit_(limit) {}
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
  // `now_ns` (MonotonicNanos) and `min_sojourn_ns`, the shortest time from
  // admission to this call among the `n` events, drive the latency target;
  // without one, or with `now_ns` 0 (events given back unserved), they are
  // ignored.
  void Release(uint64_t n, int64_t now_ns = 0, int64_t min_sojourn_ns = 0);

  // Fails every waiter and every later acquisition with UNAVAILABLE.
  void Shutdown();

  uint64_t limit() const { return limit_; }
  // The limit in force now: `limit`, or the adaptive one with a target.
  uint64_t current_limit() const;
  uint64_t in_flight() const;

 private:
  struct Waiter {
    uint64_t n;
    Callback done;
  };

  absl::Status TooLarge(uint64_t n) const;
  absl::Status RoomFor(uint64_t n) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool Fits(uint64_t n) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Adapt(uint64_t n, int64_t now_ns, int64_t min_sojourn_ns)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const uint64_t limit_;
  const int64_t target_ns_;
  mutable std::mutex mu_;
  uint64_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<Waiter> waiters_ ABSL_GUARDED_BY(mu_);
  // The latency target's state: the limit in force and the current
  // interval's start (0: none yet), released events and shortest sojourn.
  uint64_t adaptive_limit_ ABSL_GUARDED_BY(mu_);
  int64_t interval_start_ns_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t interval_released_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t interval_min_sojourn_ns_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_STAGES_ADMISSION_H_
