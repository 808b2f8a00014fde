#include "telemetry/http_listener.h"

// clang-format off
#include <utility>  // before Boost.Asio under C++20 (Debian 12)
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
// clang-format on

#include <charconv>
#include <chrono>
#include <fstream>

namespace orch::telemetry {
namespace {

namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;

constexpr std::size_t kMaxHeadBytes = 16 * 1024;
constexpr std::chrono::seconds kIdle(10);

bool SameToken(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}

std::string_view Authorization(const http::request<http::string_body>& request) {
  auto field = request[http::field::authorization];
  return std::string_view(field.data(), field.size());
}

}  // namespace

Result<ListenAddress> ParseListenAddress(std::string_view text) {
  auto bad = [&](const std::string& why) {
    return InvalidArgument("listen address \"" + std::string(text) + "\": " + why);
  };
  std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return bad("expected HOST:PORT");
  std::string host(text.substr(0, colon));
  std::string_view port_text = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  unsigned port = 0;
  auto [end, error] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || error != std::errc() || end != port_text.data() + port_text.size() ||
      port > 65535) {
    return bad("port must be a number 0..65535");
  }
  if (host != "localhost") {
    boost::system::error_code failed;
    boost::asio::ip::make_address(host, failed);
    if (failed) return bad("host must be a numeric IPv4/IPv6 address or localhost");
  }
  return ListenAddress{host, static_cast<std::uint16_t>(port)};
}

bool IsLoopbackHost(std::string_view host) {
  if (host == "localhost") return true;
  boost::system::error_code failed;
  boost::asio::ip::address address = boost::asio::ip::make_address(std::string(host), failed);
  return !failed && address.is_loopback();
}

Status CheckViewerListen(std::string_view listen_key, std::string_view listen,
                         std::string_view token_key, bool has_token) {
  Result<ListenAddress> address = ParseListenAddress(listen);
  std::string named = std::string(listen_key) + " = " + std::string(listen);
  if (!address.ok()) return InvalidArgument(named + ": " + address.status().message());
  if (!has_token && !IsLoopbackHost(address->host)) {
    return InvalidArgument(named + ": the metrics and status page would be readable by anyone " +
                           "who reaches it; bind a loopback address, or set " +
                           std::string(token_key) + " (viewers then send Authorization: Bearer)");
  }
  return Status::Ok();
}

Result<std::string> ReadViewerToken(const std::string& file) {
  std::ifstream in(file);
  if (!in) return InvalidArgument("viewer token file " + file + ": cannot be read");
  std::string line;
  std::getline(in, line);
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  while (!line.empty() && space(line.back())) line.pop_back();
  std::size_t start = 0;
  while (start < line.size() && space(line[start])) ++start;
  line.erase(0, start);
  if (line.empty()) return InvalidArgument("viewer token file " + file + ": empty first line");
  return line;
}

struct HttpListener::Impl : std::enable_shared_from_this<Impl> {
  Impl(boost::asio::io_context& io, std::string token, HttpHandler handler)
      : acceptor(io), token(std::move(token)), handler(std::move(handler)) {}

  void Accept();
  void Serve(tcp::socket socket);
  http::response<http::string_body> Answer(const http::request<http::string_body>& request);

  tcp::acceptor acceptor;
  std::string token;
  HttpHandler handler;  // emptied when the listener goes
  std::string host;
};

namespace {

// One connection: read one request, answer, close.
struct Connection : std::enable_shared_from_this<Connection> {
  Connection(tcp::socket socket, std::shared_ptr<HttpListener::Impl> owner)
      : stream(std::move(socket)), owner(std::move(owner)) {
    parser.header_limit(kMaxHeadBytes);
    parser.body_limit(0);
  }

  void Read() {
    stream.expires_after(kIdle);
    http::async_read(stream, buffer, parser,
                     [self = shared_from_this()](beast::error_code failed, std::size_t) {
                       if (failed) return self->Close();
                       self->Write();
                     });
  }

  void Write() {
    if (!owner->handler) return Close();
    response = owner->Answer(parser.get());
    stream.expires_after(kIdle);
    http::async_write(
        stream, response,
        [self = shared_from_this()](beast::error_code, std::size_t) { self->Close(); });
  }

  void Close() {
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream.socket().close(ignored);
  }

  beast::tcp_stream stream;
  std::shared_ptr<HttpListener::Impl> owner;
  beast::flat_buffer buffer;
  http::request_parser<http::string_body> parser;
  http::response<http::string_body> response;
};

}  // namespace

void HttpListener::Impl::Accept() {
  acceptor.async_accept([self = shared_from_this()](beast::error_code failed, tcp::socket socket) {
    if (!self->acceptor.is_open()) return;
    if (!failed) std::make_shared<Connection>(std::move(socket), self)->Read();
    self->Accept();
  });
}

http::response<http::string_body> HttpListener::Impl::Answer(
    const http::request<http::string_body>& request) {
  HttpReply reply;
  bool head = request.method() == http::verb::head;
  if (request.method() != http::verb::get && !head) {
    reply = {405, "text/plain; charset=utf-8", "only GET and HEAD\n"};
  } else if (!token.empty() && !SameToken(Authorization(request), "Bearer " + token)) {
    reply = {401, "text/plain; charset=utf-8", "a viewer token is required\n"};
  } else {
    reply =
        handler(HttpRequest{std::string(request.method_string()), std::string(request.target())});
  }
  http::response<http::string_body> response(static_cast<http::status>(reply.status),
                                             request.version());
  response.set(http::field::server, "orch");
  response.set(http::field::content_type, reply.content_type);
  response.set(http::field::cache_control, "no-store");
  if (reply.status == 401) response.set(http::field::www_authenticate, "Bearer");
  response.keep_alive(false);
  response.body() = head ? std::string() : std::move(reply.body);
  response.prepare_payload();
  if (head) response.content_length(reply.body.size());
  return response;
}

HttpListener::HttpListener(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpListener::~HttpListener() {
  impl_->handler = nullptr;
  boost::system::error_code ignored;
  impl_->acceptor.close(ignored);
}

Result<std::unique_ptr<HttpListener>> HttpListener::Start(boost::asio::io_context& io,
                                                          const ListenAddress& address,
                                                          std::string viewer_token,
                                                          HttpHandler handler) {
  auto impl = std::make_shared<Impl>(io, std::move(viewer_token), std::move(handler));
  std::string host = address.host == "localhost" ? "127.0.0.1" : address.host;
  std::string where = host + ":" + std::to_string(address.port);
  boost::system::error_code failed;
  tcp::endpoint endpoint(boost::asio::ip::make_address(host, failed), address.port);
  if (!failed) impl->acceptor.open(endpoint.protocol(), failed);
  if (!failed) impl->acceptor.set_option(tcp::acceptor::reuse_address(true), failed);
  if (!failed) impl->acceptor.bind(endpoint, failed);
  if (!failed) impl->acceptor.listen(boost::asio::socket_base::max_listen_connections, failed);
  if (failed) return IoError("metrics listener on " + where + ": " + failed.message());
  impl->host = endpoint.address().is_v6() ? "[" + host + "]" : host;
  impl->Accept();
  return std::unique_ptr<HttpListener>(new HttpListener(std::move(impl)));
}

std::uint16_t HttpListener::port() const { return impl_->acceptor.local_endpoint().port(); }

std::string HttpListener::url() const {
  return "http://" + impl_->host + ":" + std::to_string(port());
}

}  // namespace orch::telemetry
