#include "service/storage/journal.h"

#include <fcntl.h>
#include <liburing.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "service/errno_status.h"
#include "service/storage/journal_frame.h"

namespace cohort {
namespace service {
namespace {

constexpr uint64_t kWriteTag = 1;
constexpr uint64_t kSyncTag = 2;

}  // namespace

struct Journal::RingHolder {
  io_uring ring;
  bool initialized = false;
  ~RingHolder() {
    if (initialized) io_uring_queue_exit(&ring);
  }
};

absl::StatusOr<std::unique_ptr<Journal>> Journal::Open(
    const JournalOptions& options, uint64_t offset) {
  if (options.path.empty()) {
    return absl::InvalidArgumentError("journal: empty path");
  }
  if (options.group_max == 0) {
    return absl::InvalidArgumentError("journal: group_max must be at least 1");
  }
  if (options.group_wait_us < 0) {
    return absl::InvalidArgumentError(
        "journal: group_wait_us must not be negative");
  }
  const int fd = open(options.path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC,
                      0644);
  if (fd < 0) {
    return ErrnoStatus(errno, absl::StrCat("journal: cannot open ",
                                           options.path));
  }
  if (ftruncate(fd, static_cast<off_t>(offset)) != 0) {
    const int error = errno;
    close(fd);
    return ErrnoStatus(error, absl::StrCat("journal: cannot truncate ",
                                           options.path, " to ", offset,
                                           " bytes"));
  }
  if (options.fsync && fdatasync(fd) != 0) {
    const int error = errno;
    close(fd);
    return ErrnoStatus(error,
                       absl::StrCat("journal: cannot sync ", options.path));
  }
  std::unique_ptr<Journal> journal(new Journal(options, fd, offset));
  journal->thread_ = std::thread([j = journal.get()] { j->Run(); });
  return journal;
}

Journal::Journal(const JournalOptions& options, int fd, uint64_t offset)
    : options_(options),
      path_(options.path),
      fd_(fd),
      profile_("journal", "journal", std::nullopt, 0),
      durable_bytes_(offset),
      offset_(offset) {
  if (!options.use_io_uring) return;
  auto holder = std::make_unique<RingHolder>();
  if (io_uring_queue_init(8, &holder->ring, 0) == 0) {
    holder->initialized = true;
    ring_ = std::move(holder);
    ring_ok_ = true;
  }
}

Journal::~Journal() {
  Close();
  close(fd_);
}

void Journal::Append(uint8_t type, std::string payload, Done done) {
  Enqueue(Pending{type, std::move(payload), std::move(done), 0, ""});
}

void Journal::Rotate(std::string path, Done done) {
  Enqueue(Pending{0, "", std::move(done), 0, std::move(path)});
}

void Journal::Enqueue(Pending item) {
  absl::Status refused;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) {
      refused = absl::FailedPreconditionError(
          absl::StrCat("journal ", options_.path, " is closed"));
    } else if (!failed_.ok()) {
      refused = failed_;
    } else {
      item.enqueue_ns = MonotonicNanos();
      pending_.push_back(std::move(item));
      if (pending_.size() == 1 || pending_.size() >= options_.group_max) {
        cv_.notify_one();
      }
      return;
    }
  }
  item.done(refused);
}

void Journal::Close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    cv_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
}

uint64_t Journal::durable_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return durable_bytes_;
}

void Journal::Run() {
  for (;;) {
    size_t queue_length = 0;
    absl::Status failed;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return !pending_.empty() || closed_; });
      if (pending_.empty()) return;  // closed and drained
      if (!pending_.front().rotate_to.empty()) {
        Pending marker = std::move(pending_.front());
        pending_.pop_front();
        absl::Status status = failed_;
        lock.unlock();
        if (status.ok()) status = SwitchFile(marker.rotate_to);
        lock.lock();
        if (!status.ok() && failed_.ok()) failed_ = status;
        if (status.ok()) durable_bytes_ = 0;
        lock.unlock();
        marker.done(status);
        continue;
      }
      if (options_.group_wait_us > 0 && !closed_ &&
          pending_.size() < options_.group_max) {
        const auto deadline = std::chrono::steady_clock::time_point(
            std::chrono::nanoseconds(pending_.front().enqueue_ns +
                                     options_.group_wait_us * 1000));
        cv_.wait_until(lock, deadline, [this] {
          return closed_ || pending_.size() >= options_.group_max;
        });
      }
      queue_length = pending_.size();
      group_.clear();
      // A group ends before a Rotate marker: later records go to the next
      // file.
      while (!pending_.empty() && group_.size() < options_.group_max &&
             pending_.front().rotate_to.empty()) {
        group_.push_back(std::move(pending_.front()));
        pending_.pop_front();
      }
      failed = failed_;
    }
    const int64_t start = MonotonicNanos();
    waits_.clear();
    for (const Pending& p : group_) waits_.push_back(start - p.enqueue_ns);
    absl::Status status = failed;
    if (status.ok()) {
      buffer_.clear();
      for (const Pending& p : group_) AppendFrame(p.type, p.payload, &buffer_);
      const int64_t write_start = MonotonicNanos();
      status = WriteGroup();
      if (status.ok()) sync_durations_.Record(MonotonicNanos() - write_start);
      std::lock_guard<std::mutex> lock(mu_);
      if (status.ok()) {
        durable_bytes_ = offset_;
      } else {
        failed_ = status;
      }
    }
    profile_.RecordWaits(waits_);
    profile_.AddUpdates(group_.size());
    profile_.RecordBatch(queue_length, group_.size(), MonotonicNanos() - start);
    for (Pending& p : group_) p.done(status);
    group_.clear();
  }
}

DurationBuckets Journal::SyncDurations() const {
  return sync_durations_.ToBuckets();
}

absl::Status Journal::Failure(const char* what, int error) const {
  return absl::DataLossError(absl::StrCat("journal ", path_, ": ",
                                          what, " failed: ",
                                          ErrnoText(error)));
}

absl::Status Journal::SwitchFile(const std::string& path) {
  const int fd =
      open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return ErrnoStatus(errno, absl::StrCat("journal: cannot create ", path));
  }
  if (options_.fsync) {
    // The new file's directory entry must be durable before records in it
    // are acknowledged.
    const size_t slash = path.find_last_of('/');
    const std::string dir =
        slash == std::string::npos ? "." : path.substr(0, slash + 1);
    const int dir_fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    const int rc = dir_fd < 0 ? -1 : fsync(dir_fd);
    const int error = errno;
    if (dir_fd >= 0) close(dir_fd);
    if (rc != 0) {
      close(fd);
      return ErrnoStatus(error, absl::StrCat("journal: cannot sync ", dir));
    }
  }
  close(fd_);
  fd_ = fd;
  path_ = path;
  offset_ = 0;
  return absl::OkStatus();
}

absl::Status Journal::WriteGroup() {
  return ring_ok_ ? WriteWithRing() : WriteWithPwrite();
}

absl::Status Journal::WriteWithRing() {
  io_uring* ring = &ring_->ring;
  size_t written = 0;
  while (written < buffer_.size()) {
    io_uring_sqe* sqe = io_uring_get_sqe(ring);
    io_uring_prep_write(sqe, fd_, buffer_.data() + written,
                        static_cast<unsigned>(buffer_.size() - written),
                        offset_ + written);
    io_uring_sqe_set_data64(sqe, kWriteTag);
    unsigned submitted = 1;
    if (options_.fsync) {
      // Linked: the fdatasync starts only after the whole write succeeded
      // (a short write cancels it; the loop then writes the rest).
      sqe->flags |= IOSQE_IO_LINK;
      sqe = io_uring_get_sqe(ring);
      io_uring_prep_fsync(sqe, fd_, IORING_FSYNC_DATASYNC);
      io_uring_sqe_set_data64(sqe, kSyncTag);
      submitted = 2;
    }
    int rc = io_uring_submit_and_wait(ring, submitted);
    if (rc < 0) return Failure("io_uring submit", -rc);
    int write_result = 0;
    int sync_result = 0;
    for (unsigned i = 0; i < submitted; ++i) {
      io_uring_cqe* cqe = nullptr;
      rc = io_uring_wait_cqe(ring, &cqe);
      if (rc < 0) return Failure("io_uring wait", -rc);
      if (io_uring_cqe_get_data64(cqe) == kWriteTag) {
        write_result = cqe->res;
      } else {
        sync_result = cqe->res;
      }
      io_uring_cqe_seen(ring, cqe);
    }
    if (write_result < 0) return Failure("write", -write_result);
    if (write_result == 0) return Failure("write", EIO);
    written += static_cast<size_t>(write_result);
    if (written < buffer_.size()) continue;  // short: sync after the rest
    if (sync_result < 0) return Failure("fdatasync", -sync_result);
  }
  offset_ += buffer_.size();
  return absl::OkStatus();
}

absl::Status Journal::WriteWithPwrite() {
  size_t written = 0;
  while (written < buffer_.size()) {
    const ssize_t n = pwrite(fd_, buffer_.data() + written,
                             buffer_.size() - written,
                             static_cast<off_t>(offset_ + written));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Failure("write", errno);
    }
    if (n == 0) return Failure("write", EIO);
    written += static_cast<size_t>(n);
  }
  if (options_.fsync && fdatasync(fd_) != 0) return Failure("fdatasync", errno);
  offset_ += buffer_.size();
  return absl::OkStatus();
}

}  // namespace service
}  // namespace cohort
