// A minimal HTTP/1.1 server for the Prometheus metrics endpoint
// (--metrics_port, docs/DESIGN.md section 6). It is not part of any stage: it
// runs on its own std::thread, outside the partition cores, and answers scrapes
// by calling a render function (normally RenderPrometheus over a GetStats
// snapshot, see prometheus.h).
//
//   GET /metrics   200, the render function's output, served as
//                  "text/plain; version=0.0.4; charset=utf-8";
//   GET /          200, a short page pointing to /metrics;
//   GET other      404;  any other method 405 (with "Allow: GET");
//   malformed      400.
// A query string is ignored. Every response carries Content-Length and
// "Connection: close", and the connection is closed after it (no keep-alive).
//
// Connections are served one at a time, so a scrape is never slowed by
// another one competing for the stats. A client cannot hold the server: the
// request head (request line and headers) must arrive within 2 seconds of
// the connection being accepted and fit in 8 KiB, and the response must be
// taken within 2 seconds, or the connection is closed without a reply. Plain
// POSIX sockets and poll(); a self-pipe wakes the thread for Stop.
//
// Thread safety: Start, port, Stop and the destructor may be called from any
// thread; Stop may be called more than once and concurrently. The render
// function is called on the server thread only, one call at a time; it must
// be safe to run concurrently with whatever else touches the data it reads.
#ifndef COHORT_SERVICE_OBSERVABILITY_METRICS_HTTP_H_
#define COHORT_SERVICE_OBSERVABILITY_METRICS_HTTP_H_

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"

namespace cohort {
namespace service {

class MetricsHttpServer {
 public:
  // Start binds `host`:`port` (a numeric address or a name such as
  // "localhost"; "" or "0.0.0.0" for every IPv4 interface, "::" for every
  // interface), starts listening and starts the server thread. `port` 0 picks
  // a free port; see port(). Errors name host:port and the system's reason:
  // INVALID_ARGUMENT for a port outside 0..65535 or a host that does not
  // resolve; otherwise the status for the errno of the failing call (e.g.
  // UNAVAILABLE "metrics server: cannot bind 127.0.0.1:9100: Address already
  // in use").
  static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Start(
      const std::string& host, int port, std::function<std::string()> render);

  // Stops the server (see Stop).
  ~MetricsHttpServer();

  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

  // The port the server listens on (the chosen one when Start got port 0).
  int port() const { return port_; }

  // Stop wakes and joins the server thread, abandoning a connection being
  // served, and closes the listening socket, so the port is free when it
  // returns. Returns within milliseconds, unless a render call is running,
  // which it waits for. Idempotent.
  void Stop();

 private:
  MetricsHttpServer(int listen_fd, int wake_read_fd, int wake_write_fd,
                    int port, std::function<std::string()> render);

  // The server thread: accepts and serves connections until woken by Stop.
  void Run();
  // Reads one request from `fd`, answers it and returns; the caller closes.
  void ServeConnection(int fd);
  // The full response (status line, headers, body) to the request head.
  std::string Respond(const std::string& head);

  // Closed by Stop once the server thread has been joined; the thread is the
  // only other user.
  const int listen_fd_;
  const int wake_read_fd_;  // Readable once Stop has been called.
  const int wake_write_fd_;
  const int port_;
  const std::function<std::string()> render_;

  std::mutex stop_mu_;  // Serialises Stop.
  bool stopped_ ABSL_GUARDED_BY(stop_mu_) = false;
  std::thread thread_;  // Started by Start, joined by Stop.
};

}  // namespace service
}  // namespace cohort

#endif  // COHORT_SERVICE_OBSERVABILITY_METRICS_HTTP_H_
