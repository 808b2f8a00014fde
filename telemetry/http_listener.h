// HttpListener: a small read-only HTTP/1.1 server (Boost.Beast) on the caller's
// io_context, for the metrics endpoint and the status page (docs/metrics-endpoint.md).
//
// - GET and HEAD only (others: 405); one request per connection (Connection: close);
//   request heads above 16 KiB and bodies are refused; a connection idle for 10 s is
//   closed.
// - With a viewer token, every request must carry `Authorization: Bearer TOKEN`
//   (compared in constant time); others get 401 and the handler is not called.
// - The handler runs on the io_context's thread, like everything else of the daemon
//   that owns it, so it may read the daemon's state without locks.
// - Destroying the listener closes the acceptor; connections still open finish without
//   calling the handler again. Not thread-safe: one thread runs `io`.
//
// Listen addresses ("HOST:PORT", "[V6]:PORT"; port 0 picks a free one) and the rule
// that a listener reachable from other machines needs a viewer token are here too, so
// that the coordinator's and the agent's configs say the same thing.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace orch::telemetry {

struct ListenAddress {
  std::string host;  // numeric IPv4/IPv6 or "localhost"
  std::uint16_t port = 0;
};

// Parses "127.0.0.1:9464", "[::1]:9464", "localhost:0". The error names the text.
Result<ListenAddress> ParseListenAddress(std::string_view text);
// 127.0.0.0/8, ::1 and localhost.
bool IsLoopbackHost(std::string_view host);

// The config rule: `listen` (the value of `listen_key`) must parse and, unless
// `has_token`, be a loopback address. The error names `listen_key`, the value, and
// `token_key`.
Status CheckViewerListen(std::string_view listen_key, std::string_view listen,
                         std::string_view token_key, bool has_token);

// Reads a viewer token file: its first line, trimmed; an empty token is an error
// naming the file.
Result<std::string> ReadViewerToken(const std::string& file);

struct HttpRequest {
  std::string method;  // "GET", "HEAD"
  std::string target;  // path and query, e.g. "/metrics"
};

struct HttpReply {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

using HttpHandler = std::function<HttpReply(const HttpRequest&)>;

class HttpListener final {
 public:
  // Binds `address` now (the error names it) and serves from then on.
  static Result<std::unique_ptr<HttpListener>> Start(boost::asio::io_context& io,
                                                     const ListenAddress& address,
                                                     std::string viewer_token, HttpHandler handler);
  ~HttpListener();
  HttpListener(const HttpListener&) = delete;
  HttpListener& operator=(const HttpListener&) = delete;

  // The bound port (the one picked when the address said 0).
  std::uint16_t port() const;
  // "http://HOST:PORT" as bound.
  std::string url() const;

  struct Impl;  // opaque; public so that its connections may name it

 private:
  explicit HttpListener(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

}  // namespace orch::telemetry
