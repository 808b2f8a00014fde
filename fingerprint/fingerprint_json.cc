#include "fingerprint/fingerprint_json.h"

#include <concepts>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <type_traits>

#include "base/sha256.h"

namespace orch::fingerprint {
namespace {

using nlohmann::json;

constexpr const char* kUnknownKey = "unknown";

template <typename S, typename T>
concept Is = std::same_as<std::remove_const_t<S>, T>;

// Field lists, shared by the encoder and the decoder so the two cannot drift apart.
// `S` is the struct, const or not; `f(name, field)` is called once per field.
template <typename S, typename F>
requires Is<S, CpuFacts>
void Fields(S& s, F&& f) {
  f("vendor", s.vendor), f("model_name", s.model_name), f("family", s.family);
  f("model", s.model), f("stepping", s.stepping), f("microcode", s.microcode);
  f("flags", s.flags), f("isa_level", s.isa_level), f("avx512", s.avx512);
  f("amx", s.amx), f("sockets", s.sockets), f("cores", s.cores), f("threads", s.threads);
}
template <typename S, typename F>
requires Is<S, OsFacts>
void Fields(S& s, F&& f) {
  f("name", s.name), f("id", s.id), f("kernel_release", s.kernel_release);
  f("kernel_version", s.kernel_version), f("glibc", s.glibc);
}
template <typename S, typename F>
requires Is<S, VirtualizationFacts>
void Fields(S& s, F&& f) {
  f("container", s.container), f("hypervisor", s.hypervisor);
  f("sys_vendor", s.sys_vendor), f("product_name", s.product_name);
}
template <typename S, typename F>
requires Is<S, HostFacts>
void Fields(S& s, F&& f) {
  f("cpu", s.cpu), f("memory_bytes", s.memory_bytes), f("numa_nodes", s.numa_nodes);
  f("os", s.os), f("virtualization", s.virtualization);
}
template <typename S, typename F>
requires Is<S, GpuFacts>
void Fields(S& s, F&& f) {
  f("vendor", s.vendor), f("name", s.name), f("uuid", s.uuid);
  f("driver_version", s.driver_version), f("compute_capability", s.compute_capability);
  f("memory_total", s.memory_total), f("vbios_version", s.vbios_version);
  f("pci_bus_id", s.pci_bus_id), f("max_sm_clock", s.max_sm_clock);
  f("power_limit", s.power_limit), f("ecc_mode", s.ecc_mode);
  f("persistence_mode", s.persistence_mode), f("mig_mode", s.mig_mode);
}
template <typename S, typename F>
requires Is<S, GpuSection>
void Fields(S& s, F&& f) {
  f("nvidia_kernel_module", s.nvidia_kernel_module), f("cuda_version", s.cuda_version);
  f("rocm_driver_version", s.rocm_driver_version), f("devices", s.devices);
}
template <typename S, typename F>
requires Is<S, CheckoutState>
void Fields(S& s, F&& f) {
  f("commit", s.commit), f("branch", s.branch), f("detached", s.detached);
  f("describe", s.describe), f("dirty", s.dirty);
}
// The engine's name and each checkout's path are object keys, not fields.
template <typename S, typename F>
requires Is<S, EngineFacts>
void Fields(S& s, F&& f) {
  f("executable", s.executable), f("executable_sha256", s.executable_sha256);
  f("metadata", s.metadata), f("backend_dir", s.backend_dir);
  f("backend_libraries", s.backend_libraries);
}
template <typename S, typename F>
requires Is<S, ModelFacts>
void Fields(S& s, F&& f) {
  f("path", s.path), f("sha256", s.sha256), f("size_bytes", s.size_bytes);
}

std::string BaseName(const std::string& path) {
  auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Model keys: the file name, or the whole path when two models share a file name.
std::vector<std::string> ModelKeys(const std::vector<ModelFacts>& models) {
  std::multiset<std::string> names;
  for (const ModelFacts& model : models) names.insert(BaseName(model.path));
  std::vector<std::string> keys;
  for (const ModelFacts& model : models) {
    std::string name = BaseName(model.path);
    keys.push_back(names.count(name) > 1 ? model.path : name);
  }
  return keys;
}

// ---- encoding: values to JSON ----

json Encode(const LibraryHashes& libraries);
json Encode(const std::vector<GpuFacts>& gpus);

template <typename T>
json Encode(const Probed<T>& probed);

template <typename T>
json Encode(const T& value) {
  if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, std::int64_t> ||
                std::is_same_v<T, bool> || std::is_same_v<T, std::vector<std::string>> ||
                std::is_same_v<T, std::map<std::string, std::string>>) {
    return json(value);
  } else {
    json out = json::object();
    Fields(value, [&out](const char* name, const auto& field) { out[name] = Encode(field); });
    return out;
  }
}

template <typename T>
json Encode(const Probed<T>& probed) {
  if (!probed.known()) return json{{kUnknownKey, probed.reason()}};
  return Encode(probed.value());
}

json Encode(const LibraryHashes& libraries) {
  json out = json::object();
  for (const auto& [name, sha256] : libraries) out[name] = Encode(sha256);
  return out;
}

json Encode(const std::vector<GpuFacts>& gpus) {
  json out = json::array();
  for (const GpuFacts& gpu : gpus) out.push_back(Encode(gpu));
  return out;
}

json EncodeEngine(const EngineFacts& engine) {
  json out = Encode(engine);
  out["checkouts"] = json::object();
  for (const CheckoutFacts& checkout : engine.checkouts) {
    out["checkouts"][checkout.path] = Encode(checkout.state);
  }
  return out;
}

json EncodeFingerprint(const Fingerprint& fingerprint) {
  json out = json::object();
  out["schema"] = kSchemaVersion;
  out["host"] = Encode(fingerprint.host);
  out["gpu"] = Encode(fingerprint.gpu);
  out["engines"] = json::object();
  for (const EngineFacts& engine : fingerprint.engines) {
    out["engines"][engine.name] = EncodeEngine(engine);
  }
  out["models"] = json::object();
  std::vector<std::string> keys = ModelKeys(fingerprint.models);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    out["models"][keys[i]] = Encode(fingerprint.models[i]);
  }
  return out;
}

// ---- decoding: JSON to values. Throws DecodeError "<field path>: <problem>". ----

class DecodeError final : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] void Fail(const std::string& message) { throw DecodeError(message); }

// "cpu" + "vendor: missing" -> "cpu.vendor: missing"; "devices" + "[0]..." -> "devices[0]...".
std::string JoinPath(const std::string& prefix, const std::string& rest) {
  bool attached = !rest.empty() && (rest.front() == ':' || rest.front() == '[');
  return prefix + (attached ? "" : ".") + rest;
}

// Runs `decode`, prefixing any error with `prefix`.
template <typename F>
void WithPath(const std::string& prefix, F&& decode) {
  try {
    decode();
  } catch (const DecodeError& e) {
    Fail(JoinPath(prefix, e.what()));
  } catch (const json::exception& e) {
    Fail(prefix + ": " + e.what());
  }
}

void Decode(const json& in, LibraryHashes& out);
void Decode(const json& in, std::vector<GpuFacts>& out);
template <typename T>
void Decode(const json& in, Probed<T>& out);
template <typename T>
void Decode(const json& in, T& out);

template <typename T>
void DecodeMember(const json& in, const std::string& name, T& out) {
  if (!in.is_object()) Fail(": expected an object");
  auto it = in.find(name);
  if (it == in.end()) Fail(name + ": missing");
  WithPath(name, [&] { Decode(*it, out); });
}

bool IsUnknownMarker(const json& in) {
  return in.is_object() && in.size() == 1 && in.contains(kUnknownKey) &&
         in[kUnknownKey].is_string();
}

template <typename T>
void Decode(const json& in, T& out) {
  if constexpr (std::is_same_v<T, std::int64_t>) {
    if (!in.is_number_integer()) Fail(": expected an integer");
    out = in.get<std::int64_t>();
  } else if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, bool> ||
                       std::is_same_v<T, std::vector<std::string>> ||
                       std::is_same_v<T, std::map<std::string, std::string>>) {
    out = in.get<T>();
  } else {
    Fields(out, [&in](const char* name, auto& field) { DecodeMember(in, name, field); });
  }
}

template <typename T>
void Decode(const json& in, Probed<T>& out) {
  if (IsUnknownMarker(in)) {
    std::string reason = in[kUnknownKey].get<std::string>();
    if (reason.empty()) Fail(": empty unknown reason");
    out = Probed<T>::Unknown(std::move(reason));
    return;
  }
  T value{};
  Decode(in, value);
  out = Probed<T>::Known(std::move(value));
}

void Decode(const json& in, LibraryHashes& out) {
  if (!in.is_object()) Fail(": expected an object");
  for (const auto& item : in.items()) DecodeMember(in, item.key(), out[item.key()]);
}

void Decode(const json& in, std::vector<GpuFacts>& out) {
  if (!in.is_array()) Fail(": expected an array");
  for (std::size_t i = 0; i < in.size(); ++i) {
    WithPath("[" + std::to_string(i) + "]", [&] { Decode(in[i], out.emplace_back()); });
  }
}

const json& Section(const json& in, const std::string& name) {
  auto it = in.find(name);
  if (it == in.end() || !it->is_object()) Fail(name + ": missing or not an object");
  return *it;
}

EngineFacts DecodeEngine(const std::string& name, const json& in) {
  EngineFacts engine;
  engine.name = name;
  Decode(in, engine);
  const json& checkouts = Section(in, "checkouts");
  for (const auto& item : checkouts.items()) {
    CheckoutFacts& checkout = engine.checkouts.emplace_back();
    checkout.path = item.key();
    WithPath("checkouts", [&] { DecodeMember(checkouts, item.key(), checkout.state); });
  }
  return engine;
}

Fingerprint DecodeFingerprint(const json& in) {
  std::int64_t schema = 0;
  DecodeMember(in, "schema", schema);
  if (schema != kSchemaVersion) {
    Fail("schema: " + std::to_string(schema) + " is not the supported schema " +
         std::to_string(kSchemaVersion));
  }
  Fingerprint fingerprint;
  DecodeMember(in, "host", fingerprint.host);
  DecodeMember(in, "gpu", fingerprint.gpu);
  for (const auto& item : Section(in, "engines").items()) {
    WithPath("engines." + item.key(),
             [&] { fingerprint.engines.push_back(DecodeEngine(item.key(), item.value())); });
  }
  const json& models = Section(in, "models");
  for (const auto& item : models.items()) {
    WithPath("models",
             [&] { DecodeMember(models, item.key(), fingerprint.models.emplace_back()); });
  }
  return fingerprint;
}

}  // namespace

std::string ToCanonicalJson(const Fingerprint& fingerprint) {
  return EncodeFingerprint(fingerprint).dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<Fingerprint> ParseFingerprintJson(std::string_view json_text) {
  json document = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) return InvalidArgument("not valid JSON");
  if (!document.is_object()) return InvalidArgument("not a JSON object");
  try {
    return DecodeFingerprint(document);
  } catch (const DecodeError& e) {
    return InvalidArgument(std::string("not a fingerprint: ") + e.what());
  } catch (const json::exception& e) {
    return InvalidArgument(std::string("not a fingerprint: ") + e.what());
  }
}

std::string FingerprintId(const Fingerprint& fingerprint) {
  return FingerprintIdOfJson(ToCanonicalJson(fingerprint));
}

std::string FingerprintIdOfJson(std::string_view canonical_json) {
  return "fp-" + Sha256Hex(canonical_json).substr(0, 32);
}

}  // namespace orch::fingerprint
