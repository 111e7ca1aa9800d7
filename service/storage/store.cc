#include "service/storage/store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "service/errno_status.h"
#include "service/storage/journal_records.h"

namespace cohort {
namespace service {
namespace {

// Version 2 (issue 19) may hold string value frames (kStringValue, after
// the names) and the ops of journal_records.h's version 2; version 3
// (issue 44) kSnapshotOrSubscriptions frames. Older snapshots are read as
// before.
constexpr uint32_t kSnapshotVersion = 3;
constexpr uint32_t kOldestSnapshotVersion = 1;
constexpr size_t kSnapshotChunk = 4096;  // subscriptions per frame at most


absl::Status Lost(absl::string_view what) {
  return absl::DataLossError(std::string(what));
}

absl::Status ApplyName(uint8_t type, absl::string_view payload,
                       std::vector<std::string>* names) {
  NameRecord record;
  if (absl::Status s = DecodeName(type, payload, &record); !s.ok()) return s;
  if (record.id != names->size()) {
    return Lost(absl::StrCat("journal ", RecordTypeName(type), " record: id ",
                             record.id, " out of order (expected ",
                             names->size(), ")"));
  }
  names->push_back(std::move(record.name));
  return absl::OkStatus();
}

// Adds a decoded kSubscribe payload's subscriptions (ids first, first+1...).
absl::Status AddSubscriptions(const char* where, SubscribeRecord record,
                              StoreState* state) {
  const uint64_t n = record.subscriptions.size();
  if (record.first_id < state->next_id) {
    return Lost(absl::StrCat(where, ": subscription id ", record.first_id,
                             " reused (next id is ", state->next_id, ")"));
  }
  for (uint64_t i = 0; i < n; ++i) {
    SubscriptionInput& s = record.subscriptions[i];
    if (s.subscriber >= state->subscribers.size()) {
      return Lost(absl::StrCat(where, ": unknown subscriber id ",
                               s.subscriber));
    }
    for (size_t b = 0; b < s.conjunctions(); ++b) {
      for (const matcher::Predicate& p : s.conjunction(b)) {
        if (p.attribute >= state->attributes.size()) {
          return Lost(absl::StrCat(where, ": unknown attribute id ",
                                   p.attribute));
        }
      }
    }
  }
  for (uint64_t i = 0; i < n; ++i) {
    state->live.emplace(record.first_id + i,
                        std::move(record.subscriptions[i]));
  }
  state->next_id = record.first_id + n;
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("cannot open ", path));
  std::string data;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR) continue;
      const int error = errno;
      close(fd);
      return ErrnoStatus(error, absl::StrCat("cannot read ", path));
    }
    if (n == 0) break;
    data.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  return data;
}

// A file mapped read-only (its pages the kernel's page cache, not this
// process's heap): a fold reads a snapshot of hundreds of MB this way.
class MappedFile {
 public:
  static absl::StatusOr<std::unique_ptr<MappedFile>> Open(
      const std::string& path) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ErrnoStatus(errno, absl::StrCat("cannot open ", path));
    struct stat st;
    if (fstat(fd, &st) != 0) {
      const int error = errno;
      close(fd);
      return ErrnoStatus(error, absl::StrCat("cannot stat ", path));
    }
    auto file = std::unique_ptr<MappedFile>(new MappedFile);
    file->size_ = static_cast<size_t>(st.st_size);
    if (file->size_ > 0) {
      void* at = mmap(nullptr, file->size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (at == MAP_FAILED) {
        const int error = errno;
        close(fd);
        return ErrnoStatus(error, absl::StrCat("cannot map ", path));
      }
      file->data_ = static_cast<const char*>(at);
      madvise(at, file->size_, MADV_SEQUENTIAL);
    }
    close(fd);
    return file;
  }
  ~MappedFile() {
    if (data_ != nullptr) munmap(const_cast<char*>(data_), size_);
  }
  absl::string_view bytes() const { return {data_, size_}; }

 private:
  MappedFile() = default;
  const char* data_ = nullptr;
  size_t size_ = 0;
};

// "snapshot-12" -> 12 for prefix "snapshot-"; 0 if it does not parse.
uint64_t Generation(absl::string_view name, absl::string_view prefix) {
  if (!absl::StartsWith(name, prefix)) return 0;
  uint64_t g = 0;
  if (!absl::SimpleAtoi(name.substr(prefix.size()), &g)) return 0;
  return g;
}

}  // namespace

absl::Status StoreState::Apply(const Frame& frame) {
  switch (frame.type) {
    case kAttributeName:
      return ApplyName(frame.type, frame.payload, &attributes);
    case kSubscriberName:
      return ApplyName(frame.type, frame.payload, &subscribers);
    case kSubscribe:
    case kSubscribeOr: {
      SubscribeRecord record;
      if (absl::Status s = DecodeSubscribe(frame.type, frame.payload, &record);
          !s.ok()) {
        return s;
      }
      return AddSubscriptions("journal subscribe record", std::move(record),
                              this);
    }
    case kStringValue: {
      StringRecord record;
      if (absl::Status s = DecodeString(frame.payload, &record); !s.ok()) {
        return s;
      }
      if (record.attribute >= attributes.size()) {
        return Lost(absl::StrCat("journal string value record: unknown "
                                 "attribute id ",
                                 record.attribute));
      }
      strings.push_back(std::move(record));
      return absl::OkStatus();
    }
    case kLogPosition: {
      uint64_t position = 0;
      if (absl::Status s = DecodeLogPosition(frame.payload, &position);
          !s.ok()) {
        return s;
      }
      if (position <= log_position) {
        return Lost(absl::StrCat("journal log position record: position ",
                                 position, " after position ", log_position));
      }
      log_position = position;
      return absl::OkStatus();
    }
    case kUnsubscribe: {
      std::vector<uint64_t> ids;
      if (absl::Status s = DecodeUnsubscribe(frame.payload, &ids); !s.ok()) {
        return s;
      }
      for (uint64_t id : ids) {
        if (live.erase(id) == 0) {
          return Lost(absl::StrCat(
              "journal unsubscribe record: subscription id ", id,
              " is not live"));
        }
      }
      return absl::OkStatus();
    }
  }
  return Lost(absl::StrCat("journal: ", RecordTypeName(frame.type), " at byte ",
                           frame.offset));
}

namespace {

// A snapshot's frames before its subscriptions: header, log position,
// names, strings.
void AppendSnapshotHead(const StoreState& state, std::string* out_ptr) {
  std::string& out = *out_ptr;
  std::string header;
  PutFixed32(kSnapshotVersion, &header);
  PutFixed64(state.next_id, &header);
  AppendFrame(kSnapshotHeader, header, &out);
  if (state.log_position > 0) {
    AppendFrame(kSnapshotLogPosition, EncodeLogPosition(state.log_position),
                &out);
  }
  for (size_t id = 0; id < state.attributes.size(); ++id) {
    AppendFrame(kAttributeName,
                EncodeName(static_cast<uint32_t>(id), state.attributes[id]),
                &out);
  }
  for (size_t id = 0; id < state.subscribers.size(); ++id) {
    AppendFrame(kSubscriberName,
                EncodeName(static_cast<uint32_t>(id), state.subscribers[id]),
                &out);
  }
  for (const StringRecord& s : state.strings) {
    AppendFrame(kStringValue, EncodeString(s.attribute, s.code, s.bytes),
                &out);
  }
}

// Subscriptions by id as frames of runs of consecutive ids (at most
// kSnapshotChunk) in kSubscribe format, or kSubscribeOr's for a run with an
// "or" subscription.
// `drain(out)` after each frame (a writer's: see FoldSnapshot).
template <typename Subscriptions, typename Drain>
void AppendSnapshotRuns(const Subscriptions& by_id, std::string* out,
                        Drain&& drain) {
  std::vector<SubscriptionInput> run;
  uint64_t run_first = 0;
  auto flush = [&] {
    if (run.empty()) return;
    AppendFrame(HasBranches(run) ? kSnapshotOrSubscriptions
                                 : kSnapshotSubscriptions,
                EncodeSubscribe(run_first, run), out);
    run.clear();
    drain(out);
  };
  for (const auto& [id, subscription] : by_id) {
    if (!run.empty() &&
        (id != run_first + run.size() || run.size() == kSnapshotChunk)) {
      flush();
    }
    if (run.empty()) run_first = id;
    run.push_back(subscription);
  }
  flush();
}

void AppendSnapshotEnd(uint64_t count, std::string* out) {
  std::string end;
  PutFixed64(count, &end);
  AppendFrame(kSnapshotEnd, end, out);
}

}  // namespace

std::string EncodeSnapshot(const StoreState& state) {
  std::string out;
  AppendSnapshotHead(state, &out);
  AppendSnapshotRuns(state.live, &out, [](std::string*) {});
  AppendSnapshotEnd(state.live.size(), &out);
  return out;
}

absl::Status DecodeSnapshot(absl::string_view data, StoreState* state) {
  return DecodeSnapshot(data, state, nullptr);
}

absl::Status DecodeSnapshot(absl::string_view data, StoreState* state,
                            std::vector<SnapshotRun>* runs) {
  *state = StoreState();
  if (runs != nullptr) runs->clear();
  uint64_t in_runs = 0;  // subscriptions in *runs
  FrameReader reader(data);
  Frame frame;
  if (!reader.Next(&frame) || frame.type != kSnapshotHeader ||
      frame.payload.size() != 12) {
    return Lost("snapshot: no header (not a snapshot, or truncated)");
  }
  const uint32_t version = static_cast<uint32_t>(LoadFixed(frame.payload.data(), 4));
  if (version < kOldestSnapshotVersion || version > kSnapshotVersion) {
    return Lost(absl::StrCat("snapshot: format version ", version,
                             " (this build reads ", kOldestSnapshotVersion,
                             " to ", kSnapshotVersion, ")"));
  }
  const uint64_t next_id = LoadFixed(frame.payload.data() + 4, 8);
  bool ended = false;
  while (!ended && reader.Next(&frame)) {
    switch (frame.type) {
      case kAttributeName:
      case kSubscriberName:
      case kStringValue:
        if (absl::Status s = state->Apply(frame); !s.ok()) return s;
        break;
      case kSnapshotSubscriptions:
      case kSnapshotOrSubscriptions: {
        if (frame.type == kSnapshotOrSubscriptions && version < 3) {
          return Lost(absl::StrCat("snapshot: an \"or\" subscriptions "
                                   "frame in a version ", version,
                                   " snapshot"));
        }
        if (runs != nullptr) {
          // Kept as bytes: the first id and count lead the payload.
          if (frame.payload.size() < 12) {
            return Lost("snapshot: subscriptions frame too short");
          }
          const uint64_t first = LoadFixed(frame.payload.data(), 8);
          const uint64_t n = LoadFixed(frame.payload.data() + 8, 4);
          if (first < state->next_id || n == 0) {
            return Lost(absl::StrCat("snapshot: subscriptions frame at id ",
                                     first, " out of order"));
          }
          runs->push_back({first, n, frame.type,
                           data.substr(frame.offset,
                                       kFrameHeaderBytes +
                                           frame.payload.size())});
          state->next_id = first + n;
          in_runs += n;
          break;
        }
        SubscribeRecord record;
        if (absl::Status s = DecodeSubscribe(
                frame.type == kSnapshotSubscriptions ? kSubscribe
                                                     : kSubscribeOr,
                frame.payload, &record);
            !s.ok()) {
          return s;
        }
        if (absl::Status s = AddSubscriptions("snapshot", std::move(record),
                                              state);
            !s.ok()) {
          return s;
        }
        break;
      }
      case kSnapshotLogPosition:
        if (frame.payload.size() != 8 || state->log_position != 0 ||
            !state->attributes.empty() || !state->live.empty() ||
            in_runs > 0) {
          return Lost("snapshot: a log position frame out of place");
        }
        state->log_position = LoadFixed(frame.payload.data(), 8);
        break;
      case kSnapshotEnd:
        if (frame.payload.size() != 8 ||
            LoadFixed(frame.payload.data(), 8) !=
                state->live.size() + in_runs) {
          return Lost(absl::StrCat("snapshot: end frame does not match the ",
                                   state->live.size() + in_runs,
                                   " subscriptions read"));
        }
        ended = true;
        break;
      default:
        return Lost(absl::StrCat("snapshot: unexpected ",
                                 RecordTypeName(frame.type), " frame"));
    }
  }
  if (!ended) {
    return Lost(absl::StrCat("snapshot: ", StopName(reader.stop()),
                             " before its end frame, at byte ",
                             reader.valid_bytes()));
  }
  if (reader.valid_bytes() != data.size()) {
    return Lost("snapshot: bytes after its end frame");
  }
  if (next_id < state->next_id) {
    return Lost("snapshot: next id below a live subscription's id");
  }
  state->next_id = next_id;
  return absl::OkStatus();
}

AtomicFileWriter::AtomicFileWriter(const std::string& dir,
                                   const std::string& name)
    : dir_(dir),
      tmp_(absl::StrCat(dir, "/", name, ".tmp")),
      path_(absl::StrCat(dir, "/", name)) {
  fd_ = open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    status_ = ErrnoStatus(errno, absl::StrCat("cannot create ", tmp_));
  }
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) close(fd_);
  if (!committed_) unlink(tmp_.c_str());
}

void AtomicFileWriter::Write(absl::string_view data) {
  size_t written = 0;
  while (status_.ok() && written < data.size()) {
    const ssize_t n = write(fd_, data.data() + written, data.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      status_ = ErrnoStatus(n < 0 ? errno : EIO,
                            absl::StrCat("cannot write ", tmp_));
      return;
    }
    written += static_cast<size_t>(n);
  }
}

void AtomicFileWriter::Append(absl::string_view data) {
  if (!status_.ok()) return;
  if (buffer_.size() + data.size() > kBuffer) {
    Write(buffer_);
    buffer_.clear();
  }
  if (data.size() >= kBuffer) {
    Write(data);
  } else {
    buffer_.append(data.data(), data.size());
  }
}

absl::Status AtomicFileWriter::Commit() {
  if (status_.ok()) Write(buffer_);
  buffer_.clear();
  if (!status_.ok()) return status_;
  if (fsync(fd_) != 0) {
    return status_ = ErrnoStatus(errno, absl::StrCat("cannot sync ", tmp_));
  }
  close(fd_);
  fd_ = -1;
  if (rename(tmp_.c_str(), path_.c_str()) != 0) {
    return status_ = ErrnoStatus(
               errno, absl::StrCat("cannot rename ", tmp_, " to ", path_));
  }
  committed_ = true;
  const int dir_fd = open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) {
    return status_ = ErrnoStatus(errno, absl::StrCat("cannot open ", dir_));
  }
  const int rc = fsync(dir_fd);
  const int error = errno;
  close(dir_fd);
  if (rc != 0) {
    return status_ = ErrnoStatus(error, absl::StrCat("cannot sync ", dir_));
  }
  return absl::OkStatus();
}

absl::Status WriteFileAtomically(const std::string& dir,
                                 const std::string& name,
                                 absl::string_view data) {
  AtomicFileWriter writer(dir, name);
  writer.Append(data);
  return writer.Commit();
}

std::string SnapshotName(uint64_t generation) {
  return absl::StrCat("snapshot-", generation);
}
std::string JournalName(uint64_t generation) {
  return absl::StrCat("journal-", generation);
}

namespace {

// The files Recover reads from `dir` (snapshots up to `below`, journals
// below it): in *r the newest snapshot's generation, the obsolete files and
// the journal generation appends go to; in *replay the journals to replay
// after the snapshot, checked to be contiguous and to continue it.
absl::Status ListGenerations(const std::string& dir, uint64_t below,
                             Recovery* r, std::vector<uint64_t>* replay_out) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) {
    return ErrnoStatus(errno, absl::StrCat("cannot read directory ", dir));
  }
  std::vector<uint64_t> snapshots, journals;
  std::vector<std::string> temporary;
  while (dirent* entry = readdir(d)) {
    const absl::string_view name = entry->d_name;
    if (absl::EndsWith(name, ".tmp")) {
      temporary.emplace_back(name);
    } else if (const uint64_t s = Generation(name, "snapshot-"); s > 0) {
      if (s <= below) snapshots.push_back(s);
    } else if (const uint64_t j = Generation(name, "journal-"); j > 0) {
      if (j < below) journals.push_back(j);
    }
  }
  closedir(d);
  std::sort(snapshots.begin(), snapshots.end());
  std::sort(journals.begin(), journals.end());

  for (const std::string& name : temporary) {
    r->obsolete.push_back(absl::StrCat(dir, "/", name));
  }
  if (!snapshots.empty()) {
    r->snapshot_generation = snapshots.back();
    for (size_t i = 0; i + 1 < snapshots.size(); ++i) {
      r->obsolete.push_back(absl::StrCat(dir, "/", SnapshotName(snapshots[i])));
    }
  }
  std::vector<uint64_t>& replay = *replay_out;
  replay.clear();
  for (uint64_t g : journals) {
    if (g < r->snapshot_generation) {
      r->obsolete.push_back(absl::StrCat(dir, "/", JournalName(g)));
    } else {
      replay.push_back(g);
    }
  }
  for (size_t i = 1; i < replay.size(); ++i) {
    if (replay[i] != replay[i - 1] + 1) {
      return absl::DataLossError(absl::StrCat(
          dir, ": ", JournalName(replay[i - 1] + 1), " is missing between ",
          JournalName(replay[i - 1]), " and ", JournalName(replay[i])));
    }
  }
  // journal-<g> for g > 1 continues snapshot-<g>: without that snapshot
  // the records before it are gone.
  if (!replay.empty() && r->snapshot_generation == 0 &&
      replay.front() != 1) {
    return absl::DataLossError(absl::StrCat(
        dir, ": ", SnapshotName(replay.front()), " is missing before ",
        JournalName(replay.front())));
  }
  if (!replay.empty() && r->snapshot_generation > 0 &&
      replay.front() != r->snapshot_generation) {
    return absl::DataLossError(absl::StrCat(
        dir, ": ", JournalName(r->snapshot_generation), " is missing after ",
        SnapshotName(r->snapshot_generation)));
  }
  r->journal_generation =
      replay.empty() ? std::max<uint64_t>(r->snapshot_generation, 1)
                     : replay.back();
  r->tail = "end";
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Recovery> Recover(const std::string& dir, uint64_t below,
                                 bool log_positions) {
  Recovery r;
  std::vector<uint64_t> replay;
  if (absl::Status s = ListGenerations(dir, below, &r, &replay); !s.ok()) {
    return s;
  }
  if (r.snapshot_generation > 0) {
    const std::string path =
        absl::StrCat(dir, "/", SnapshotName(r.snapshot_generation));
    absl::StatusOr<std::string> data = ReadWholeFile(path);
    if (!data.ok()) return data.status();
    if (absl::Status s = DecodeSnapshot(*data, &r.state); !s.ok()) {
      return absl::DataLossError(absl::StrCat(path, ": ", s.message()));
    }
  }
  // With log positions, the records since the last kLogPosition record wait
  // here (views into `data`, which the loop keeps) until the next one.
  std::vector<Frame> unmarked;
  for (size_t i = 0; i < replay.size(); ++i) {
    const std::string path = absl::StrCat(dir, "/", JournalName(replay[i]));
    absl::StatusOr<std::string> data = ReadWholeFile(path);
    if (!data.ok()) return data.status();
    auto apply = [&](const Frame& frame) -> absl::Status {
      if (absl::Status s = r.state.Apply(frame); !s.ok()) {
        return absl::DataLossError(absl::StrCat(path, " at byte ",
                                                frame.offset, ": ",
                                                s.message()));
      }
      ++r.records_replayed;
      return absl::OkStatus();
    };
    FrameReader reader(*data);
    Frame frame;
    while (reader.Next(&frame)) {
      if (!log_positions) {
        if (absl::Status s = apply(frame); !s.ok()) return s;
        continue;
      }
      if (frame.type != kLogPosition) {
        unmarked.push_back(frame);
        continue;
      }
      for (const Frame& waiting : unmarked) {
        if (absl::Status s = apply(waiting); !s.ok()) return s;
      }
      unmarked.clear();
      if (absl::Status s = apply(frame); !s.ok()) return s;
    }
    const bool newest = i + 1 == replay.size();
    if (reader.stop() != FrameReader::Stop::kEnd && !newest) {
      return absl::DataLossError(absl::StrCat(
          path, ": ", StopName(reader.stop()), " frame at byte ",
          reader.valid_bytes(), " in a journal that is not the newest"));
    }
    if (!newest && !unmarked.empty()) {
      // Durability rotates only right after a kLogPosition record.
      return absl::DataLossError(absl::StrCat(
          path, ": ends with ", unmarked.size(),
          " records after its last log position record"));
    }
    if (newest) {
      r.journal_bytes = reader.valid_bytes();
      r.bytes_discarded = reader.discarded_bytes();
      r.tail = StopName(reader.stop());
      if (!unmarked.empty()) {
        r.unmarked_records = unmarked.size();
        r.unmarked_bytes = r.journal_bytes - unmarked.front().offset;
        r.journal_bytes = unmarked.front().offset;
      }
    }
  }
  return r;
}

namespace {

// Whether a sorted `ids` holds an id of [first, first + n).
bool AnyIn(const std::vector<uint64_t>& ids, uint64_t first, uint64_t n) {
  auto it = std::lower_bound(ids.begin(), ids.end(), first);
  return it != ids.end() && *it - first < n;
}

// TakeSnapshot on one node: the newest snapshot's subscription frames are
// copied as bytes (checked by their checksums as they are read), and only
// those holding a subscription the journals unsubscribed are decoded and
// written again; the journals' records are applied as recovery applies
// them. The work is the snapshot's bytes plus the changes, not a decode and
// an encode of every live subscription.
absl::StatusOr<uint64_t> FoldSnapshot(const std::string& dir,
                                      uint64_t generation) {
  Recovery files;
  std::vector<uint64_t> replay;
  if (absl::Status s = ListGenerations(dir, generation, &files, &replay);
      !s.ok()) {
    return s;
  }
  // state: the names, strings and next id, and in `live` only what the
  // journals subscribed; runs: the snapshot's subscription frames.
  StoreState state;
  std::vector<SnapshotRun> runs;
  std::unique_ptr<MappedFile> old;  // the runs' frames point into it
  if (files.snapshot_generation > 0) {
    const std::string path =
        absl::StrCat(dir, "/", SnapshotName(files.snapshot_generation));
    absl::StatusOr<std::unique_ptr<MappedFile>> mapped =
        MappedFile::Open(path);
    if (!mapped.ok()) return mapped.status();
    old = std::move(*mapped);
    if (absl::Status s = DecodeSnapshot(old->bytes(), &state, &runs);
        !s.ok()) {
      return absl::DataLossError(absl::StrCat(path, ": ", s.message()));
    }
  }
  uint64_t in_runs = 0;
  for (const SnapshotRun& run : runs) in_runs += run.count;
  absl::flat_hash_set<uint64_t> removed;  // from the runs
  auto in_a_run = [&runs](uint64_t id) {
    auto after = std::upper_bound(
        runs.begin(), runs.end(), id,
        [](uint64_t v, const SnapshotRun& run) { return v < run.first; });
    return after != runs.begin() && id - std::prev(after)->first <
                                        std::prev(after)->count;
  };
  for (uint64_t g : replay) {
    const std::string path = absl::StrCat(dir, "/", JournalName(g));
    absl::StatusOr<std::string> data = ReadWholeFile(path);
    if (!data.ok()) return data.status();
    FrameReader reader(*data);
    Frame frame;
    while (reader.Next(&frame)) {
      absl::Status s;
      if (frame.type == kUnsubscribe) {
        std::vector<uint64_t> ids;
        s = DecodeUnsubscribe(frame.payload, &ids);
        for (size_t i = 0; s.ok() && i < ids.size(); ++i) {
          if (state.live.erase(ids[i]) == 0 &&
              !(in_a_run(ids[i]) && removed.insert(ids[i]).second)) {
            s = Lost(absl::StrCat(
                "journal unsubscribe record: subscription id ", ids[i],
                " is not live"));
          }
        }
      } else {
        s = state.Apply(frame);
      }
      if (!s.ok()) {
        return absl::DataLossError(absl::StrCat(path, " at byte ",
                                                frame.offset, ": ",
                                                s.message()));
      }
    }
    if (reader.stop() != FrameReader::Stop::kEnd) {
      // A journal that is no longer appended to ends in a damaged frame:
      // keep the files for an operator rather than fold the damage away.
      return absl::DataLossError(absl::StrCat(
          path, ": ", StopName(reader.stop()), " frame at byte ",
          reader.valid_bytes(), "; not folding it into ",
          SnapshotName(generation)));
    }
  }
  const uint64_t count = in_runs - removed.size() + state.live.size();
  if (files.snapshot_generation != generation) {
    std::vector<uint64_t> gone(removed.begin(), removed.end());
    std::sort(gone.begin(), gone.end());
    // Written as it is made, through a 1 MiB buffer: never whole in
    // memory.
    AtomicFileWriter writer(dir, SnapshotName(generation));
    std::string out;
    auto drain = [&writer](std::string* pending) {
      writer.Append(*pending);
      pending->clear();
    };
    AppendSnapshotHead(state, &out);
    drain(&out);
    for (const SnapshotRun& run : runs) {
      if (!AnyIn(gone, run.first, run.count)) {
        writer.Append(run.frame);
        continue;
      }
      SubscribeRecord record;
      if (absl::Status s = DecodeSubscribe(
              run.type == kSnapshotSubscriptions ? kSubscribe : kSubscribeOr,
              run.frame.substr(kFrameHeaderBytes), &record);
          !s.ok()) {
        return absl::DataLossError(absl::StrCat(
            dir, "/", SnapshotName(files.snapshot_generation), ": ",
            s.message()));
      }
      std::vector<std::pair<uint64_t, SubscriptionInput>> kept;
      for (size_t i = 0; i < record.subscriptions.size(); ++i) {
        const uint64_t id = record.first_id + i;
        if (!std::binary_search(gone.begin(), gone.end(), id)) {
          kept.emplace_back(id, std::move(record.subscriptions[i]));
        }
      }
      AppendSnapshotRuns(kept, &out, drain);
    }
    AppendSnapshotRuns(state.live, &out, drain);
    AppendSnapshotEnd(count, &out);
    drain(&out);
    if (absl::Status s = writer.Commit(); !s.ok()) return s;
  }
  RemoveGenerationsBefore(dir, generation);
  return count;
}

}  // namespace

absl::StatusOr<uint64_t> TakeSnapshot(const std::string& dir,
                                      uint64_t generation,
                                      bool log_positions,
                                      std::string* written,
                                      uint64_t* log_position) {
  if (!log_positions && written == nullptr) {
    if (log_position != nullptr) *log_position = 0;
    return FoldSnapshot(dir, generation);
  }
  absl::StatusOr<Recovery> folded = Recover(dir, generation, log_positions);
  if (!folded.ok()) return folded.status();
  if (folded->bytes_discarded > 0) {
    // A journal that is no longer appended to ends in a damaged frame: keep
    // the files for an operator rather than fold the damage away.
    return absl::DataLossError(absl::StrCat(
        dir, "/", JournalName(folded->journal_generation), ": ",
        folded->tail, " frame at byte ", folded->journal_bytes,
        "; not folding it into ", SnapshotName(generation)));
  }
  if (folded->snapshot_generation != generation) {
    std::string snapshot = EncodeSnapshot(folded->state);
    if (absl::Status s =
            WriteFileAtomically(dir, SnapshotName(generation), snapshot);
        !s.ok()) {
      return s;
    }
    if (written != nullptr) *written = std::move(snapshot);
  }
  if (log_position != nullptr) *log_position = folded->state.log_position;
  // Everything older is now redundant: the snapshot just written holds it.
  RemoveGenerationsBefore(dir, generation);
  return folded->state.live.size();
}

bool HoldsState(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return false;
  bool holds = false;
  while (dirent* entry = readdir(d)) {
    const absl::string_view name = entry->d_name;
    if (Generation(name, "snapshot-") > 0) {
      holds = true;
    } else if (Generation(name, "journal-") > 0) {
      struct stat st;
      const std::string path = absl::StrCat(dir, "/", name);
      if (stat(path.c_str(), &st) == 0 && st.st_size > 0) holds = true;
    }
  }
  closedir(d);
  return holds;
}

void RemoveGenerationsBefore(const std::string& dir, uint64_t generation) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return;
  std::vector<std::string> doomed;
  while (dirent* entry = readdir(d)) {
    const absl::string_view name = entry->d_name;
    const uint64_t g = std::max(Generation(name, "snapshot-"),
                                Generation(name, "journal-"));
    if ((g > 0 && g < generation) || absl::EndsWith(name, ".tmp")) {
      doomed.push_back(absl::StrCat(dir, "/", name));
    }
  }
  closedir(d);
  for (const std::string& path : doomed) unlink(path.c_str());
}

}  // namespace service
}  // namespace cohort
