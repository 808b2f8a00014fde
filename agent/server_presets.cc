#include "agent/server_presets.h"

#include "base/suggest.h"

namespace orch::agent {
namespace {

using Axes = std::map<std::string, std::map<std::string, ServerAxisValue>>;

// llama.cpp's KV cache types (the -ctk/-ctv values the driver declares).
const std::vector<std::string>& KvTypes() {
  static const std::vector<std::string> types = {"f32",  "f16",  "bf16", "q8_0",  "q4_0",
                                                 "q4_1", "q5_0", "q5_1", "iq4_nl"};
  return types;
}

ServerAxisValue Args(std::vector<std::string> args) { return {std::move(args), {}}; }

// A numeric launch setting: 0 is the server's default, any other value is passed on.
std::map<std::string, ServerAxisValue> Numeric(std::vector<std::string> flags) {
  std::vector<std::string> args;
  for (const std::string& flag : flags) {
    args.push_back(flag);
    args.push_back("{value}");
  }
  return {{"0", {}}, {kAnyAxisValue, Args(args)}};
}

Axes LlamaServerAxes() {
  Axes axes;
  for (const char* mode : {"on", "off", "auto"}) axes["attention"][mode] = Args({"-fa", mode});
  for (const std::string& k : KvTypes()) {
    axes["kv"][k] = Args({"-ctk", k, "-ctv", k});
    for (const std::string& v : KvTypes()) {
      if (v != k) axes["kv"][k + "/" + v] = Args({"-ctk", k, "-ctv", v});
    }
  }
  // --device none: no GPU at all, not even for the large batches' matrix products
  // that a CUDA build would offload from host memory (op offload) with -ngl 0 alone.
  axes["hardware"]["cpu"] = Args({"-ngl", "0", "--device", "none"});
  axes["hardware"]["gpu"] = Args({"-ngl", "999"});
  axes["tp"]["1"] = {};
  axes["threads"] = Numeric({"-t", "-tb"});
  axes["batch"] = Numeric({"-b"});
  axes["ubatch"] = Numeric({"-ub"});
  axes["ctx"] = Numeric({"-c"});
  axes["slots"] = {{kAnyAxisValue, Args({"-np", "{value}"})}};
  axes["repack"]["on"] = {};
  axes["repack"]["off"] = Args({"--no-repack"});
  return axes;
}

}  // namespace

const std::vector<std::string>& ServerPresetNames() {
  static const std::vector<std::string> names = {"llama-server"};
  return names;
}

Result<Axes> ServerPresetAxes(const std::string& name) {
  if (name == "llama-server") return LlamaServerAxes();
  std::string guess = ClosestName(name, ServerPresetNames());
  return InvalidArgument("unknown preset \"" + name + "\"" +
                         (guess.empty() ? "" : "; did you mean \"" + guess + "\"?") +
                         " (presets: llama-server)");
}

Status ApplyServerPreset(ServerConfig& server) {
  if (server.preset.empty()) return Status::Ok();
  ORCH_ASSIGN_OR_RETURN(Axes axes, ServerPresetAxes(server.preset));
  for (auto& [axis, values] : axes) server.axes.try_emplace(axis, std::move(values));
  return Status::Ok();
}

}  // namespace orch::agent
