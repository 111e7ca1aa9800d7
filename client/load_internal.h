// Internals of the load driver (client/load.h) shared by its subscribe phase
// (load.cc), its publish phase (load_publish.cc) and its reports
// (load_report.cc). Not for use outside those files.
#ifndef COHORT_CLIENT_LOAD_INTERNAL_H_
#define COHORT_CLIENT_LOAD_INTERNAL_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "client/load.h"
#include "grpcpp/grpcpp.h"
#include "proto/cohort/v1/pubsub.grpc.pb.h"
#include "proto/cohort/v1/pubsub.pb.h"
#include "workload/workload.h"

namespace cohort {
namespace client {
namespace internal {

using Clock = std::chrono::steady_clock;

inline double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// CodeName() is the status code's name as the API documents it, e.g.
// "RESOURCE_EXHAUSTED" (gRPC and Abseil number their codes alike).
std::string CodeName(grpc::StatusCode code);

// NewChannel() opens a channel to `target` with `security`'s credentials,
// its own TCP connection and no limit on received messages, and keeps it
// until the process exits (see "Threads" in load.h).
std::shared_ptr<grpc::Channel> NewChannel(const std::string& target,
                                          const ClientSecurity& security);

// KeepUntilExit() keeps `object` alive until the process exits (it is never
// destroyed: exit-time destruction could race with gRPC's threads).
void KeepUntilExit(std::shared_ptr<void> object);

// The requests publishers cycle through: ceil(N / batch) requests, request k
// holding events k*batch ... k*batch+batch-1 modulo N, so one pass over the
// pool publishes every event at least once (the last request wraps around to
// the first events). Built once and shared read-only by all clients.
using RequestPool = std::vector<v1::PublishRequest>;

// REQUIRES: !workload.events.empty(), batch >= 1.
RequestPool BuildRequestPool(const workload::Workload& workload, int batch,
                             bool return_ids);

// RunPublish() runs options.clients publishers over `pool` for the
// schedule options describe and merges what they observed into `*result`
// (every field except before/after). REQUIRES: options are valid,
// options.mode != kNone, !pool.empty().
void RunPublish(const LoadOptions& options, const RequestPool& pool,
                PublishResult* result);

}  // namespace internal
}  // namespace client
}  // namespace cohort

#endif  // COHORT_CLIENT_LOAD_INTERNAL_H_
