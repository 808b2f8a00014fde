// The coordinator's config file (TOML), documented in docs/coordinator.md:
//
//   [coordinator]
//   id = "coord-1"
//   listen = "tcp://127.0.0.1:7700"   # "tcp://127.0.0.1:*" picks a free port
//   data_dir = "orch-data"            # relative to the config file's directory
//   heartbeat_interval_ms = 1000
//   agent_timeout_ms = 5000
//   lease_ms = 30000
//   retry_budget = 3
//   key = "keys/coordinator.key_secret"   # CurveZMQ: its secret key (orch keygen)
//   allowed_keys = "keys/allowed"         # the public keys it admits, with roles
//   insecure = false                      # plain sockets on a non-loopback address
//   max_bundle_bytes = 1073741824         # a result bundle's blobs, inflated, at most
//   metrics_listen = "127.0.0.1:9464"     # Prometheus metrics and the status page; off
//   metrics_viewer_token_file = "keys/viewer.token"  # required for a non-loopback listen
//
// Without `key` the sockets are plain, which is allowed only when `listen` is a
// loopback (or ipc/inproc) address, or with `insecure = true`. With `key`,
// `allowed_keys` is required (docs/security.md).
//
// Every key is optional (defaults as shown). Errors name file:line:column, the
// field and the value; unknown keys are errors too (a typo must not silently
// take a default).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "bundle/bundle_file.h"
#include "coordinator/options.h"

namespace orch::coordinator {

struct CoordinatorConfig {
  CoordinatorOptions options;
  std::string listen = "tcp://127.0.0.1:7700";
  std::string data_dir;      // absolute, or relative to the working directory
  std::string key;           // secret key file; empty: plain sockets
  std::string allowed_keys;  // folder of NAME.key files; with `key`
  bool insecure = false;
  // What one result bundle may inflate to (bundle/bundle_file.h).
  std::uint64_t max_bundle_bytes = bundle::kDefaultMaxBundleBytes;
  // The HTTP listener for /metrics and the status page (docs/metrics-endpoint.md);
  // empty: none. Loopback only unless a viewer token file is set.
  std::string metrics_listen;
  std::string metrics_viewer_token_file;  // its first line is the bearer token
};

// Whether `endpoint` can only be reached from this machine (127.x, localhost,
// ::1, ipc://, inproc://).
bool IsLoopbackEndpoint(const std::string& endpoint);

// Parses `text`, read from `file` (named in errors; relative paths resolve
// against its directory).
Result<CoordinatorConfig> ParseCoordinatorConfig(std::string_view text, const std::string& file);

}  // namespace orch::coordinator
