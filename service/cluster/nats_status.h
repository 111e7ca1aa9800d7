// Small helpers shared by cluster mode's NATS users (subscription_log,
// snapshot_exchange). Internal to service/cluster: it includes nats.h.
//
// Thread safety: plain functions; NatsError reads libnats' per-thread last
// error.
#ifndef COHORT_SERVICE_CLUSTER_NATS_STATUS_H_
#define COHORT_SERVICE_CLUSTER_NATS_STATUS_H_

#include <nats/nats.h>

#include <chrono>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace cohort {
namespace service {

// UNAVAILABLE: "<what>: <libnats' text> (JetStream error N): <last error>",
// the parts present.
absl::Status NatsError(absl::string_view what, natsStatus s, int jerr);

// Now on the clock JetStream stamps stored messages with (the system clock,
// ns since the epoch), for comparing with those stamps.
inline int64_t StreamClockNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_CLUSTER_NATS_STATUS_H_
