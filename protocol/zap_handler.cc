// ZAP handler: ZeroMQ RFC 27 requests in, 200/400 replies out. zmq::error_t never
// leaves this file.
#include "protocol/zap_handler.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "protocol/identity_key.h"

namespace orch::protocol {

constexpr const char* kZapEndpoint = "inproc://zeromq.zap.01";

struct ZapHandler::State {
  std::mutex mutex;  // guards allowed (SetAllowed)
  std::map<std::string, std::string> allowed;
  RefusedHandshakeHandler on_refused;
  std::set<std::pair<std::string, std::string>> reported;  // (address, key)
  std::atomic<bool> stop{false};
  // Written when stop is set, so that the handler's wait ends at once: a process
  // that stops (every `orch run` stops a coordinator) does not wait for a poll's timeout.
  int wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  std::atomic<std::uint64_t> refused{0};
  std::thread thread;
  ~State() {
    if (wake_fd >= 0) ::close(wake_fd);
  }
};

namespace {

// The reply to one request: [version, request id, status code, status text, user id,
// metadata]. Request: [version, request id, domain, address, identity, mechanism,
// credentials...]; for CURVE the one credential is the client's 32-byte public key.
std::vector<std::string> Answer(const std::vector<zmq::message_t>& request,
                                ZapHandler::State& state) {
  std::string id = request.size() > 1 ? request[1].to_string() : "";
  std::string address = request.size() > 3 ? request[3].to_string() : "";
  std::string key = request.size() > 6 && request[5].to_string_view() == "CURVE"
                        ? Z85Encode(request[6].to_string_view())
                        : "";
  auto deny = [&](const char* why) {
    state.refused.fetch_add(1);
    if (state.on_refused) {
      if (state.reported.size() >= ZapHandler::kMaxRefusalsRemembered) state.reported.clear();
      if (state.reported.emplace(address, key).second) {
        state.on_refused(RefusedHandshake{address, key, why});
      }
    }
    return std::vector<std::string>{"1.0", id, "400", why, "", ""};
  };
  if (request.size() < 7 || request[0].to_string_view() != "1.0") return deny("malformed request");
  if (request[5].to_string_view() != "CURVE") return deny("only CURVE clients are admitted");
  std::string name;
  {
    std::lock_guard lock(state.mutex);
    auto it = state.allowed.find(key);
    if (it == state.allowed.end()) return deny("unknown key");
    name = it->second;
  }
  // An admitted pair is told about again if it is refused later (a key removed).
  state.reported.erase({address, key});
  return {"1.0", id, "200", "OK", name, ""};
}

void Serve(zmq::socket_t& socket, ZapHandler::State& state) {
  while (!state.stop.load()) {
    zmq::pollitem_t items[] = {{socket.handle(), 0, ZMQ_POLLIN, 0},
                               {nullptr, state.wake_fd, ZMQ_POLLIN, 0}};
    // Without the wake-up descriptor (eventfd failed), stop is looked at every 50 ms.
    int count = state.wake_fd >= 0 ? 2 : 1;
    auto wait = std::chrono::milliseconds(state.wake_fd >= 0 ? -1 : 50);
    if (zmq::poll(items, count, wait) <= 0 || (items[0].revents & ZMQ_POLLIN) == 0) continue;
    std::vector<zmq::message_t> request;
    do {
      zmq::message_t part;
      if (!socket.recv(part, zmq::recv_flags::dontwait)) break;
      request.push_back(std::move(part));
    } while (socket.get(zmq::sockopt::rcvmore));
    std::vector<std::string> reply = Answer(request, state);
    for (std::size_t i = 0; i < reply.size(); ++i) {
      socket.send(zmq::buffer(reply[i]),
                  i + 1 < reply.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
  }
}

}  // namespace

Result<std::unique_ptr<ZapHandler>> ZapHandler::Start(zmq::context_t& context,
                                                      std::map<std::string, std::string> allowed,
                                                      RefusedHandshakeHandler on_refused) {
  auto state = std::make_shared<State>();
  state->allowed = std::move(allowed);
  state->on_refused = std::move(on_refused);
  std::promise<Status> bound;
  std::future<Status> ready = bound.get_future();
  // The socket is made, bound and used on the handler's thread only.
  state->thread = std::thread([&context, state, &bound] {
    bool announced = false;
    try {
      zmq::socket_t socket(context, zmq::socket_type::rep);
      socket.set(zmq::sockopt::linger, 0);
      socket.bind(kZapEndpoint);
      announced = true;
      bound.set_value(Status::Ok());
      Serve(socket, *state);
    } catch (const zmq::error_t& e) {
      // Before the bind: Start fails. After: the context is ending; stop serving.
      if (!announced) {
        bound.set_value(Status(StatusCode::kUnavailable, std::string("start the ZAP handler at ") +
                                                             kZapEndpoint + ": " + e.what()));
      }
    }
  });
  Status status = ready.get();
  if (!status.ok()) {
    state->thread.join();
    return status;
  }
  return std::unique_ptr<ZapHandler>(new ZapHandler(std::move(state)));
}

ZapHandler::~ZapHandler() {
  state_->stop.store(true);
  if (state_->wake_fd >= 0) {
    std::uint64_t one = 1;
    [[maybe_unused]] ssize_t written = ::write(state_->wake_fd, &one, sizeof one);
  }
  if (state_->thread.joinable()) state_->thread.join();
}

std::uint64_t ZapHandler::refused() const { return state_->refused.load(); }

void ZapHandler::SetAllowed(std::map<std::string, std::string> allowed) {
  std::lock_guard lock(state_->mutex);
  state_->allowed = std::move(allowed);
}

}  // namespace orch::protocol
