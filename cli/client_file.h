// DATA_DIR/client.json: how `orch run` tells other terminals on this machine where
// its coordinator listens and which keys reach it, so that `orch status --data-dir
// DIR` needs nothing copied by hand (docs/cli.md). orch run writes it atomically once
// its coordinator is up, as {"schema": "orch.client/1", "coordinator": ENDPOINT,
// "key": FILE, "coordinator_key": FILE, "ended": false} (the keys "" for a plain
// coordinator), and again with "ended": true when the run stops.
#pragma once

#include <string>

#include "base/status.h"

namespace orch::cli {

struct ClientFile {
  std::string coordinator;      // endpoint
  std::string key;              // the secret key of orch run's admin
  std::string coordinator_key;  // the coordinator's public key
  bool ended = false;
};

std::string ClientFilePath(const std::string& data_dir);
Status WriteClientFile(const std::string& data_dir, const ClientFile& file);
// NotFound when DIR has none; InvalidArgument naming the file and the field when
// it is not a client file.
Result<ClientFile> ReadClientFile(const std::string& data_dir);

// "the run in DIR has ended; its store is there: orch report EXPERIMENT --data-dir
// DIR" (EXPERIMENT literally when `experiment` is empty).
std::string RunEndedMessage(const std::string& data_dir, const std::string& experiment);

}  // namespace orch::cli
