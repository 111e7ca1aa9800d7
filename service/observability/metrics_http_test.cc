#include "service/observability/metrics_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort {
namespace service {
namespace {

using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

// A client gives up on a silent server after this long; the server's own
// client timeout is 2 s, so anything slower is a failure.
constexpr int kClientReceiveTimeoutSeconds = 10;

// Opens a TCP connection to 127.0.0.1:port; -1 on failure.
int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  timeval timeout{kClientReceiveTimeoutSeconds, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

void SendAll(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n =
        send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;  // The server may close early; the caller checks.
    sent += static_cast<size_t>(n);
  }
}

// Reads until EOF, error or timeout.
std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

// Sends `request` on a new connection and returns everything the server sent.
std::string Exchange(int port, const std::string& request) {
  const int fd = Connect(port);
  if (fd < 0) return "connect failed";
  SendAll(fd, request);
  std::string response = ReadAll(fd);
  close(fd);
  return response;
}

struct HttpResponse {
  std::string status_line;
  std::map<std::string, std::string> headers;  // Lower-case names.
  std::string body;
};

HttpResponse Parse(const std::string& raw) {
  HttpResponse r;
  const size_t end = raw.find("\r\n\r\n");
  if (end == std::string::npos) return r;
  r.body = raw.substr(end + 4);
  const std::vector<std::string> lines =
      absl::StrSplit(raw.substr(0, end), "\r\n");
  r.status_line = lines[0];
  for (size_t i = 1; i < lines.size(); ++i) {
    const size_t colon = lines[i].find(':');
    if (colon == std::string::npos) continue;
    r.headers[absl::AsciiStrToLower(lines[i].substr(0, colon))] =
        std::string(absl::StripAsciiWhitespace(lines[i].substr(colon + 1)));
  }
  return r;
}

std::unique_ptr<MetricsHttpServer> StartOrDie(
    std::function<std::string()> render) {
  auto server = MetricsHttpServer::Start("127.0.0.1", 0, std::move(render));
  EXPECT_TRUE(server.ok()) << server.status();
  if (!server.ok()) return nullptr;
  EXPECT_GT((*server)->port(), 0);
  return *std::move(server);
}

TEST(MetricsHttpServer, ServesMetrics) {
  std::atomic<int> renders{0};
  auto server = StartOrDie([&renders] {
    ++renders;
    return std::string("# TYPE cohort_up gauge\ncohort_up 1\n");
  });
  ASSERT_NE(server, nullptr);
  const HttpResponse r = Parse(
      Exchange(server->port(),
               "GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\n"));
  EXPECT_EQ(r.status_line, "HTTP/1.1 200 OK");
  EXPECT_EQ(r.headers.at("content-type"),
            "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(r.headers.at("connection"), "close");
  EXPECT_EQ(r.headers.at("content-length"), absl::StrCat(r.body.size()));
  EXPECT_EQ(r.body, "# TYPE cohort_up gauge\ncohort_up 1\n");
  EXPECT_EQ(renders.load(), 1);

  // A query string is ignored; HTTP/1.0 and bare LF line ends are accepted.
  EXPECT_EQ(Parse(Exchange(server->port(), "GET /metrics?x=1 HTTP/1.0\n\n"))
                .status_line,
            "HTTP/1.1 200 OK");
  EXPECT_EQ(renders.load(), 2);
}

TEST(MetricsHttpServer, RootPointsToMetrics) {
  auto server = StartOrDie([] { return std::string("x"); });
  ASSERT_NE(server, nullptr);
  const HttpResponse r =
      Parse(Exchange(server->port(), "GET / HTTP/1.1\r\n\r\n"));
  EXPECT_EQ(r.status_line, "HTTP/1.1 200 OK");
  EXPECT_THAT(r.body, HasSubstr("/metrics"));
  EXPECT_EQ(r.headers.at("content-length"), absl::StrCat(r.body.size()));
}

TEST(MetricsHttpServer, UnknownPathIs404) {
  auto server = StartOrDie([] { return std::string("x"); });
  ASSERT_NE(server, nullptr);
  const HttpResponse r =
      Parse(Exchange(server->port(), "GET /metricsx HTTP/1.1\r\n\r\n"));
  EXPECT_EQ(r.status_line, "HTTP/1.1 404 Not Found");
  EXPECT_EQ(r.headers.at("connection"), "close");
}

TEST(MetricsHttpServer, NonGetIs405) {
  auto server = StartOrDie([] { return std::string("x"); });
  ASSERT_NE(server, nullptr);
  // The unread body must not turn the reply into a connection reset.
  const HttpResponse r = Parse(
      Exchange(server->port(),
               "POST /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello"));
  EXPECT_EQ(r.status_line, "HTTP/1.1 405 Method Not Allowed");
  EXPECT_EQ(r.headers.at("allow"), "GET");
  EXPECT_EQ(
      Parse(Exchange(server->port(), "HEAD / HTTP/1.1\r\n\r\n")).status_line,
      "HTTP/1.1 405 Method Not Allowed");
}

TEST(MetricsHttpServer, MalformedRequestIs400) {
  auto server = StartOrDie([] { return std::string("x"); });
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(Parse(Exchange(server->port(), "garbage\r\n\r\n")).status_line,
            "HTTP/1.1 400 Bad Request");
  EXPECT_EQ(Parse(Exchange(server->port(), "GET /metrics SPDY/3\r\n\r\n"))
                .status_line,
            "HTTP/1.1 400 Bad Request");
}

// Property: a request head over 8 KiB is refused by closing the connection,
// and the server goes on serving.
TEST(MetricsHttpServer, OversizeRequestLineClosesConnection) {
  auto server = StartOrDie([] { return std::string("x"); });
  ASSERT_NE(server, nullptr);
  const auto start = Clock::now();
  const std::string raw = Exchange(
      server->port(), "GET /" + std::string(9 * 1024, 'a') + " HTTP/1.1\r\n");
  EXPECT_EQ(raw, "");
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(1));
  EXPECT_EQ(Parse(Exchange(server->port(), "GET /metrics HTTP/1.1\r\n\r\n"))
                .status_line,
            "HTTP/1.1 200 OK");
}

// Property: a client that connects and sends nothing is dropped after about
// 2 s, and a scrape queued behind it is then served.
TEST(MetricsHttpServer, SilentClientIsDroppedAndNextIsServed) {
  auto server = StartOrDie([] { return std::string("x"); });
  ASSERT_NE(server, nullptr);
  const auto start = Clock::now();
  const int silent = Connect(server->port());
  ASSERT_GE(silent, 0);
  std::string next;
  std::thread scraper([&] {
    // Connect after the silent client so it is served second.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    next = Exchange(server->port(), "GET /metrics HTTP/1.1\r\n\r\n");
  });
  EXPECT_EQ(ReadAll(silent), "");  // EOF once the server gives up.
  const auto dropped_after = Clock::now() - start;
  close(silent);
  scraper.join();
  EXPECT_GE(dropped_after, std::chrono::milliseconds(1500));
  EXPECT_LT(dropped_after, std::chrono::seconds(5));
  EXPECT_EQ(Parse(next).status_line, "HTTP/1.1 200 OK");
}

TEST(MetricsHttpServer, StopIsPromptEvenWithAConnectedClient) {
  auto server = StartOrDie([] { return std::string("x"); });
  ASSERT_NE(server, nullptr);
  const int port = server->port();
  const int idle = Connect(port);
  ASSERT_GE(idle, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // Accepted.
  const auto start = Clock::now();
  server->Stop();
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(500));
  server->Stop();  // Idempotent.
  close(idle);
  // The port is free again once Stop returns.
  auto again = MetricsHttpServer::Start("127.0.0.1", port,
                                        [] { return std::string("y"); });
  EXPECT_TRUE(again.ok()) << again.status();
}

TEST(MetricsHttpServer, DestructorStopsPromptly) {
  auto server = StartOrDie([] { return std::string("x"); });
  ASSERT_NE(server, nullptr);
  const auto start = Clock::now();
  server.reset();
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(500));
}

TEST(MetricsHttpServer, SecondServerOnSamePortFailsClearly) {
  auto first = StartOrDie([] { return std::string("x"); });
  ASSERT_NE(first, nullptr);
  auto second = MetricsHttpServer::Start("127.0.0.1", first->port(),
                                         [] { return std::string("y"); });
  ASSERT_FALSE(second.ok());
  const std::string message(second.status().message());
  EXPECT_THAT(message, HasSubstr(absl::StrCat("127.0.0.1:", first->port())));
  EXPECT_THAT(message, HasSubstr("Address already in use"));
  EXPECT_THAT(message, HasSubstr("bind"));
}

TEST(MetricsHttpServer, BadPortOrHostFails) {
  auto bad_port = MetricsHttpServer::Start("127.0.0.1", 70000,
                                           [] { return std::string("x"); });
  ASSERT_FALSE(bad_port.ok());
  EXPECT_EQ(bad_port.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad_port.status().message()),
              HasSubstr("127.0.0.1:70000"));
  // 192.0.2.0/24 is reserved for documentation: never a local address.
  auto foreign =
      MetricsHttpServer::Start("192.0.2.1", 0, [] { return std::string("x"); });
  ASSERT_FALSE(foreign.ok());
  EXPECT_THAT(std::string(foreign.status().message()),
              HasSubstr("192.0.2.1:0"));
}

}  // namespace
}  // namespace service
}  // namespace cohort
