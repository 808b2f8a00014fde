#include "agent/spool.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/errno_status.h"
#include "protocol/codec.h"

namespace orch::agent {
namespace {

namespace fs = std::filesystem;

// Run ids come from the coordinator: in hex, no byte of one ('/', "..") can
// reach the file system as part of a path.
std::string Hex(const std::string& text) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : text) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

std::string SeqName(std::uint64_t seq) {
  char name[32];
  // 20 digits hold any uint64: a fixed width lets LoadRun read the seq at a
  // fixed offset, and names sort in seq order.
  std::snprintf(name, sizeof(name), "chunk-%020llu", static_cast<unsigned long long>(seq));
  return name;
}

Status SyncPath(const std::string& path, int flags) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return ErrnoError("open " + path, errno);
  int rc = ::fsync(fd);
  ::close(fd);
  return rc == 0 ? Status::Ok() : ErrnoError("fsync " + path, errno);
}

// Writes `bytes` to `path` atomically and durably (temp file, fsync, rename,
// dir fsync).
Status WriteDurably(const std::string& path, const std::string& bytes) {
  std::string temp = path + ".tmp";
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("create " + temp, errno);
  std::size_t written = 0;
  while (written < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Status status = ErrnoError("write " + temp, errno);
      ::close(fd);
      return status;
    }
    written += static_cast<std::size_t>(n);
  }
  // The data is synced before the rename, so the final name never shows a partial
  // file; the directory sync below makes the rename itself durable.
  if (::fsync(fd) != 0) {
    Status status = ErrnoError("fsync " + temp, errno);
    ::close(fd);
    return status;
  }
  ::close(fd);
  if (::rename(temp.c_str(), path.c_str()) != 0) return ErrnoError("rename " + temp, errno);
  return SyncPath(fs::path(path).parent_path().string(), O_RDONLY | O_DIRECTORY);
}

Result<std::string> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError("cannot read " + path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

constexpr char kLockFile[] = "agent.lock";

// The pid the holder of `fd`'s lock wrote, or a phrase saying it has not written
// one yet (it writes right after it locks).
std::string HolderOf(int fd) {
  char text[32] = {};
  ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  std::string pid = n > 0 ? std::string(text, static_cast<std::size_t>(n)) : "";
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  return pid.empty() ? "a process that has not written its pid yet" : "pid " + pid;
}

// Takes the exclusive lock on DIR/agent.lock and writes this process's pid in it.
// Held by another open file: kFailedPrecondition naming `dir` and the holder,
// and the file is left as it was.
Result<UniqueFd> LockSpool(const std::string& dir) {
  std::string path = (fs::path(dir) / kLockFile).string();
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (!fd.valid()) return ErrnoError("open " + path, errno);
  int rc = 0;
  do {
    rc = ::flock(fd.get(), LOCK_EX | LOCK_NB);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0 && errno != EWOULDBLOCK) return ErrnoError("lock " + path, errno);
  if (rc != 0) {
    return Status(StatusCode::kFailedPrecondition,
                  "spool " + dir + " is in use by another agent (" + HolderOf(fd.get()) +
                      ", holding " + path +
                      "); one agent per spool: stop that one, or give "
                      "this one its own agent.spool_dir");
  }
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd.get(), 0) != 0) return ErrnoError("truncate " + path, errno);
  if (::pwrite(fd.get(), pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    return ErrnoError("write " + path, errno);
  }
  return fd;
}

}  // namespace

Result<std::unique_ptr<Spool>> Spool::Open(const std::string& dir) {
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) return IoError("create spool directory " + dir + ": " + error.message());
  ORCH_ASSIGN_OR_RETURN(UniqueFd lock, LockSpool(dir));
  std::unique_ptr<Spool> spool(new Spool(dir, std::move(lock)));
  ORCH_RETURN_IF_ERROR(spool->Load().WithContext("spool " + dir));
  return spool;
}

std::string Spool::RunDir(const std::string& run_id) const {
  return (fs::path(dir_) / ("run-" + Hex(run_id))).string();
}

Status Spool::Load() {
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir_, error)) {
    if (entry.is_directory() && entry.path().filename().string().starts_with("run-")) {
      ORCH_RETURN_IF_ERROR(LoadRun(entry.path().string()));
    }
  }
  if (error) return IoError("list " + dir_ + ": " + error.message());
  return Status::Ok();
}

Status Spool::LoadRun(const std::string& run_dir) {
  // Without its run-id, a run directory is one whose removal was cut short (the agent
  // killed while it removed a run all of whose messages were acknowledged) or whose
  // creation was (the id is made durable before anything else is written there): it
  // holds nothing to send, and is removed rather than refused.
  std::error_code error;
  if (!fs::exists(run_dir + "/run-id", error) && !error) {
    fs::remove_all(run_dir, error);
    if (error)
      return IoError("remove " + run_dir + " (a run without its run-id): " + error.message());
    return Status::Ok();
  }
  std::string run_id;
  // The directory's name is the id's hex; the id itself is kept in this file.
  ORCH_ASSIGN_OR_RETURN(run_id, ReadAll(run_dir + "/run-id"));
  RunEntry& run = runs_[run_id];
  for (const fs::directory_entry& entry : fs::directory_iterator(run_dir)) {
    std::string name = entry.path().filename().string();
    // A leftover ".tmp" of a write cut short ends in neither suffix and is skipped.
    // An ".acked" marker holds no frame but still counts towards the chunk count.
    if (name.starts_with("chunk-") && (name.ends_with(".msg") || name.ends_with(".acked"))) {
      std::uint64_t seq = std::stoull(name.substr(6, 20));
      run.chunk_count = std::max(run.chunk_count, seq + 1);
      if (name.ends_with(".acked")) continue;
      ORCH_ASSIGN_OR_RETURN(std::string frame, ReadAll(entry.path().string()));
      // Decoded only to check it: a damaged file is reported now, naming it, rather
      // than sent to the coordinator.
      Result<protocol::Message> message = protocol::Decode(frame);
      if (!message.ok()) return message.status().WithContext(entry.path().string());
      run.unacked_chunks[seq] = std::move(frame);
    } else if (name == "finished.msg") {
      ORCH_ASSIGN_OR_RETURN(std::string frame, ReadAll(entry.path().string()));
      Result<protocol::Message> message = protocol::Decode(frame);
      if (!message.ok()) return message.status().WithContext(entry.path().string());
      run.finished = std::move(frame);
    }
  }
  return Status::Ok();
}

Status Spool::BeginRun(const std::string& run_id) {
  std::string run_dir = RunDir(run_id);
  std::error_code error;
  fs::create_directories(run_dir, error);
  if (error) return IoError("create " + run_dir + ": " + error.message());
  ORCH_RETURN_IF_ERROR(WriteDurably(run_dir + "/run-id", run_id));
  // The new run directory's entry in the spool directory must be durable too, or
  // a crash could lose the record that the run began.
  ORCH_RETURN_IF_ERROR(SyncPath(dir_, O_RDONLY | O_DIRECTORY));
  runs_[run_id];
  return Status::Ok();
}

Status Spool::AddChunk(const protocol::DigestChunk& chunk) {
  return AddChunk(chunk, protocol::Encode(chunk));
}

Status Spool::AddChunk(const protocol::DigestChunk& chunk, std::string frame) {
  if (!runs_.contains(chunk.run_id)) ORCH_RETURN_IF_ERROR(BeginRun(chunk.run_id));
  ORCH_RETURN_IF_ERROR(
      WriteDurably(RunDir(chunk.run_id) + "/" + SeqName(chunk.seq) + ".msg", frame));
  RunEntry& run = runs_[chunk.run_id];
  run.unacked_chunks[chunk.seq] = std::move(frame);
  run.chunk_count = std::max(run.chunk_count, chunk.seq + 1);
  return Status::Ok();
}

Status Spool::AddFinished(const protocol::RunFinished& finished) {
  return AddFinished(finished, protocol::Encode(finished));
}

Status Spool::AddFinished(const protocol::RunFinished& finished, std::string frame) {
  // A refused Assign never began: its RunFinished creates the run here.
  if (!runs_.contains(finished.run_id)) ORCH_RETURN_IF_ERROR(BeginRun(finished.run_id));
  ORCH_RETURN_IF_ERROR(WriteDurably(RunDir(finished.run_id) + "/finished.msg", frame));
  runs_[finished.run_id].finished = std::move(frame);
  return Status::Ok();
}

Status Spool::Ack(const std::string& run_id, std::uint64_t seq) {
  auto it = runs_.find(run_id);
  if (it == runs_.end()) return Status::Ok();
  std::string run_dir = RunDir(run_id);
  if (seq == protocol::kRunFinishedSeq) {
    if (!it->second.finished) return Status::Ok();
    // The coordinator stores RunFinished also while chunks are missing (they may
    // come later): the run is done only when every chunk is acknowledged too.
    it->second.finished_acked = true;
    return RemoveIfDone(it);
  }
  if (it->second.unacked_chunks.erase(seq) == 0) return Status::Ok();
  std::string path = run_dir + "/" + SeqName(seq);
  // Renamed, not deleted: the marker keeps the seq, and so the run's chunk count,
  // across a restart; at any moment one of the two names exists. It is then
  // truncated to free the chunk's bytes.
  if (::rename((path + ".msg").c_str(), (path + ".acked").c_str()) != 0) {
    return ErrnoError("rename " + path + ".msg", errno);
  }
  if (::truncate((path + ".acked").c_str(), 0) != 0) return ErrnoError("truncate " + path, errno);
  return RemoveIfDone(it);
}

Status Spool::RemoveIfDone(std::map<std::string, RunEntry>::iterator run) {
  if (!run->second.finished_acked || !run->second.unacked_chunks.empty()) return Status::Ok();
  std::string run_dir = RunDir(run->first);
  std::error_code error;
  fs::remove_all(run_dir, error);
  if (error) return IoError("remove " + run_dir + ": " + error.message());
  runs_.erase(run);
  return Status::Ok();
}

std::vector<std::string> Spool::UnackedFrames() const {
  std::vector<std::string> frames;
  for (const auto& [run_id, run] : runs_) {
    for (const auto& [seq, frame] : run.unacked_chunks) frames.push_back(frame);
    if (run.finished && !run.finished_acked) frames.push_back(*run.finished);
  }
  return frames;
}

std::vector<std::string> Spool::UnackedKeys() const {
  std::vector<std::string> keys;
  for (const auto& [run_id, run] : runs_) {
    for (const auto& [seq, frame] : run.unacked_chunks)
      keys.push_back(run_id + "/" + std::to_string(seq));
    if (run.finished && !run.finished_acked) {
      keys.push_back(run_id + "/" + std::to_string(protocol::kRunFinishedSeq));
    }
  }
  return keys;
}

std::vector<std::string> Spool::UnfinishedRuns() const {
  std::vector<std::string> runs;
  for (const auto& [run_id, run] : runs_) {
    if (!run.finished) runs.push_back(run_id);
  }
  return runs;
}

std::vector<std::string> Spool::FinishedUnacked() const {
  std::vector<std::string> runs;
  for (const auto& [run_id, run] : runs_) {
    // A run stays in runs_ only until all of it is acknowledged (RemoveIfDone), so a
    // RunFinished here means something is still unacknowledged.
    if (run.finished) runs.push_back(run_id);
  }
  return runs;
}

std::uint64_t Spool::ChunkCount(const std::string& run_id) const {
  auto it = runs_.find(run_id);
  return it == runs_.end() ? 0 : it->second.chunk_count;
}

std::size_t Spool::unacked() const {
  std::size_t count = 0;
  for (const auto& [run_id, run] : runs_) {
    count += run.unacked_chunks.size() + (run.finished && !run.finished_acked ? 1 : 0);
  }
  return count;
}

SpoolLedger Spool::Ledger() const {
  SpoolLedger ledger;
  for (const auto& [run_id, run] : runs_) {
    ledger.BeginRun(run_id);
    for (const auto& [seq, frame] : run.unacked_chunks) ledger.AddChunk(run_id, seq);
    if (!run.finished) continue;
    ledger.AddFinished(run_id);
    if (run.finished_acked) ledger.MarkFinishedAcked(run_id);
  }
  return ledger;
}

}  // namespace orch::agent
