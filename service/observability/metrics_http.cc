#include "service/observability/metrics_http.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/memory/memory.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace cohort {
namespace service {
namespace {

using Clock = std::chrono::steady_clock;

// How long a client may take to send its request head, and to take the
// response. Prometheus sends a scrape in one packet and reads at once; 2 s
// is generous for any real client yet bounds how long a stuck or malicious
// one delays the next scrape (default scrape interval: 15 s).
constexpr std::chrono::milliseconds kClientTimeout{2000};

// Largest request head (request line and headers) accepted. A scrape's head
// is a few hundred bytes; 8 KiB is the common server default.
constexpr size_t kMaxRequestHeadBytes = 8 * 1024;

// After the response, how long to read and discard what the client still
// sends (say, a POST body) before closing. Closing a socket with unread input
// makes the kernel send RST, which can destroy the response in flight; a
// client that has read its response closes at once, so this rarely waits.
constexpr std::chrono::milliseconds kLingerTimeout{100};

// Pause after an accept() failure such as EMFILE: the pending connection
// stays queued, so retrying at once would spin.
constexpr int kAcceptErrorBackoffMs = 100;

// Pending connections the kernel queues while one is served. Scrapers are
// few; the rest would be refused by the client's own timeout anyway.
constexpr int kListenBacklog = 16;

constexpr absl::string_view kMetricsContentType =
    "text/plain; version=0.0.4; charset=utf-8";
constexpr absl::string_view kTextContentType = "text/plain; charset=utf-8";

std::string HostPort(const std::string& host, int port) {
  if (absl::StrContains(host, ':')) return absl::StrCat("[", host, "]:", port);
  return absl::StrCat(host, ":", port);
}

void CloseFd(int fd) {
  if (fd >= 0) close(fd);
}

// Creates a socket for `ai`, binds and listens; returns it, or -1 with errno
// set and `*step` naming the call that failed.
int BindAndListen(const addrinfo* ai, const char** step) {
  *step = "create a socket for";
  const int fd =
      socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
  if (fd < 0) return -1;
  // Lets a restarted server rebind while old connections sit in TIME_WAIT; it
  // does not let two servers listen on one port.
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  *step = "bind";
  if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
    *step = "listen on";
    if (listen(fd, kListenBacklog) == 0) return fd;
  }
  const int saved = errno;
  close(fd);
  errno = saved;
  return -1;
}

absl::StatusOr<int> OpenListener(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* addrs = nullptr;
  const std::string service = absl::StrCat(port);
  const int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(),
                             service.c_str(), &hints, &addrs);
  if (rc != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics server: cannot resolve ", HostPort(host, port),
                     ": ", gai_strerror(rc)));
  }
  const char* step = "bind";
  int error = EADDRNOTAVAIL;
  int fd = -1;
  for (const addrinfo* ai = addrs; ai != nullptr && fd < 0; ai = ai->ai_next) {
    fd = BindAndListen(ai, &step);
    if (fd < 0) error = errno;
  }
  freeaddrinfo(addrs);
  if (fd < 0) {
    return absl::ErrnoToStatus(
        error, absl::StrCat("metrics server: cannot ", step, " ",
                            HostPort(host, port)));
  }
  return fd;
}

// The port `fd` is bound to, or -1.
int BoundPort(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return -1;
  }
  if (addr.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_port);
  }
  return ntohs(reinterpret_cast<const sockaddr_in*>(&addr)->sin_port);
}

enum class Wait { kReady, kTimeout, kStopped };

// Waits until `fd` has `events` or `deadline` passes; kStopped if Stop wakes
// `wake_fd` first. The wake byte is left in the pipe for Run to see.
Wait WaitFor(int fd, short events, int wake_fd, Clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - Clock::now());
    if (left.count() <= 0) return Wait::kTimeout;
    pollfd fds[2] = {{fd, events, 0}, {wake_fd, POLLIN, 0}};
    const int n = poll(fds, 2, static_cast<int>(left.count()) + 1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Wait::kTimeout;
    if (fds[1].revents != 0) return Wait::kStopped;
    if (fds[0].revents != 0) return Wait::kReady;
  }
}

// Where the request head in `data` ends (after its blank line), or npos.
size_t HeadEnd(absl::string_view data) {
  const size_t crlf = data.find("\r\n\r\n");
  const size_t lf = data.find("\n\n");
  if (crlf != absl::string_view::npos &&
      (lf == absl::string_view::npos || crlf < lf)) {
    return crlf + 4;
  }
  return lf == absl::string_view::npos ? lf : lf + 2;
}

// Reads the request head (and perhaps some of a body after it); returns
// false, and the connection should be closed without a reply, on EOF, error,
// timeout, Stop or a head over kMaxRequestHeadBytes.
bool ReadHead(int fd, int wake_fd, std::string* head) {
  const Clock::time_point deadline = Clock::now() + kClientTimeout;
  char buf[4096];
  for (;;) {
    const size_t end = HeadEnd(*head);
    if (end != absl::string_view::npos) return end <= kMaxRequestHeadBytes;
    if (head->size() > kMaxRequestHeadBytes) return false;
    if (WaitFor(fd, POLLIN, wake_fd, deadline) != Wait::kReady) return false;
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return false;
    head->append(buf, static_cast<size_t>(n));
  }
}

// Sends all of `data`; false on error, timeout or Stop.
bool WriteAll(int fd, int wake_fd, absl::string_view data) {
  const Clock::time_point deadline = Clock::now() + kClientTimeout;
  while (!data.empty()) {
    const ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return false;
    if (WaitFor(fd, POLLOUT, wake_fd, deadline) != Wait::kReady) return false;
  }
  return true;
}

// Half-closes and discards client input until EOF or kLingerTimeout.
void Linger(int fd, int wake_fd) {
  shutdown(fd, SHUT_WR);
  const Clock::time_point deadline = Clock::now() + kLingerTimeout;
  char buf[4096];
  while (WaitFor(fd, POLLIN, wake_fd, deadline) == Wait::kReady) {
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return;
  }
}

std::string Response(absl::string_view status, absl::string_view content_type,
                     absl::string_view body, absl::string_view extra = "") {
  return absl::StrCat("HTTP/1.1 ", status, "\r\nContent-Type: ", content_type,
                      "\r\nContent-Length: ", body.size(), "\r\n", extra,
                      "Connection: close\r\n\r\n", body);
}

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    const std::string& host, int port, std::function<std::string()> render) {
  if (port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics server: port ", port, " of ",
                     HostPort(host, port), " is not in 0..65535"));
  }
  absl::StatusOr<int> listen_fd = OpenListener(host, port);
  if (!listen_fd.ok()) return listen_fd.status();
  int wake[2];
  if (pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    const int error = errno;
    close(*listen_fd);
    return absl::ErrnoToStatus(
        error, absl::StrCat("metrics server: cannot create a pipe for ",
                            HostPort(host, port)));
  }
  auto server = absl::WrapUnique(new MetricsHttpServer(
      *listen_fd, wake[0], wake[1], BoundPort(*listen_fd), std::move(render)));
  server->thread_ = std::thread(&MetricsHttpServer::Run, server.get());
  return server;
}

MetricsHttpServer::MetricsHttpServer(int listen_fd, int wake_read_fd,
                                     int wake_write_fd, int port,
                                     std::function<std::string()> render)
    : listen_fd_(listen_fd),
      wake_read_fd_(wake_read_fd),
      wake_write_fd_(wake_write_fd),
      port_(port),
      render_(std::move(render)) {}

MetricsHttpServer::~MetricsHttpServer() { Stop(); }

void MetricsHttpServer::Stop() {
  std::lock_guard<std::mutex> lock(stop_mu_);
  if (stopped_) return;
  stopped_ = true;
  const char byte = 0;
  // The pipe is empty (only Stop writes, once), so this cannot block or fail
  // for want of space.
  while (write(wake_write_fd_, &byte, 1) < 0 && errno == EINTR) {
  }
  if (thread_.joinable()) thread_.join();
  // Closing the listener frees the port at once; clients still queued in the
  // backlog see a reset.
  CloseFd(listen_fd_);
  CloseFd(wake_read_fd_);
  CloseFd(wake_write_fd_);
}

void MetricsHttpServer::Run() {
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_read_fd_, POLLIN, 0}};
    const int n = poll(fds, 2, -1);
    if (n < 0 && errno == EINTR) continue;
    if (fds[1].revents != 0) return;
    if (n <= 0 || fds[0].revents == 0) continue;
    const int fd =
        accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) {
        pollfd wake = {wake_read_fd_, POLLIN, 0};
        poll(&wake, 1, kAcceptErrorBackoffMs);
      }
      continue;
    }
    ServeConnection(fd);
    close(fd);
  }
}

void MetricsHttpServer::ServeConnection(int fd) {
  std::string head;
  if (!ReadHead(fd, wake_read_fd_, &head)) return;
  const std::string response = Respond(head);
  if (!WriteAll(fd, wake_read_fd_, response)) return;
  Linger(fd, wake_read_fd_);
}

std::string MetricsHttpServer::Respond(const std::string& head) {
  absl::string_view line(head);
  line = line.substr(0, line.find('\n'));
  if (absl::EndsWith(line, "\r")) line.remove_suffix(1);
  const std::vector<absl::string_view> parts = absl::StrSplit(line, ' ');
  if (parts.size() != 3 || !absl::StartsWith(parts[2], "HTTP/1.") ||
      !absl::StartsWith(parts[1], "/")) {
    return Response("400 Bad Request", kTextContentType, "bad request\n");
  }
  if (parts[0] != "GET") {
    return Response("405 Method Not Allowed", kTextContentType,
                    "only GET is supported\n", "Allow: GET\r\n");
  }
  const absl::string_view path = parts[1].substr(0, parts[1].find('?'));
  if (path == "/metrics") {
    return Response("200 OK", kMetricsContentType, render_());
  }
  if (path == "/") {
    return Response("200 OK", kTextContentType,
                    "cohortd: Prometheus metrics are at /metrics\n");
  }
  return Response("404 Not Found", kTextContentType, "not found\n");
}

}  // namespace service
}  // namespace cohort
