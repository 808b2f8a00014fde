#include "fingerprint/fingerprint_class.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "base/sha256.h"

namespace orch::fingerprint {
namespace {

using nlohmann::json;

// CPU flags that say how the machine is run, not which instructions it executes: the
// hypervisor bit, and speculation mitigations and timer facts that the kernel, the BIOS
// or the microcode turn on and off on identical processors.
const std::set<std::string, std::less<>> kNonIsaFlags = {
    "amd_ibpb",      "amd_ssbd",       "amd_stibp",   "arch_capabilities",
    "flush_l1d",     "hypervisor",     "ibpb",        "ibrs",
    "ibrs_enhanced", "intel_ppin",     "intel_stibp", "md_clear",
    "pti",           "retpoline",      "spec_ctrl",   "ssbd",
    "stibp",         "tsc_known_freq", "virt_ssbd"};

// Paths in the driver's hello that name where the engine is installed on this host.
const std::set<std::string, std::less<>> kHelloLocalPaths = {"library_dir", "backend_file"};
// Where and when a server engine's run took place (its URL, its log, the jobs the server
// ran before): the same server configuration at another port is the same class.
const std::set<std::string, std::less<>> kHelloServerRunFacts = {"url", "log", "jobs_before"};

// A known value as JSON; an unknown one as {"unknown": true}: the reason (a tool's error
// text, a timeout) may differ between identical machines, the fact that it is unknown not.
template <typename T, typename F>
json Value(const Probed<T>& probed, F&& encode) {
  if (!probed.known()) return json{{"unknown", true}};
  return encode(probed.value());
}
template <typename T>
json Value(const Probed<T>& probed) {
  return Value(probed, [](const T& v) { return json(v); });
}

json IsaFlags(const std::vector<std::string>& flags) {
  json out = json::array();
  for (const std::string& flag : flags) {
    if (!kNonIsaFlags.contains(flag)) out.push_back(flag);
  }
  return out;
}

// "2.36 (Debian GLIBC 2.36-9+deb12u4)" -> "2.36": the upstream release decides the libm
// code; distribution patch levels differ between equally installed machines.
json GlibcRelease(const Probed<std::string>& glibc) {
  return Value(glibc, [](const std::string& v) { return json(v.substr(0, v.find(' '))); });
}

// Logical processors stay: engines default their thread count to it, and the thread count
// sets how parallel reductions are split.
json HostClass(const HostFacts& host) {
  const CpuFacts& cpu = host.cpu;
  return json{{"cpu",
               {{"vendor", Value(cpu.vendor)},
                {"model_name", Value(cpu.model_name)},
                {"family", Value(cpu.family)},
                {"model", Value(cpu.model)},
                {"stepping", Value(cpu.stepping)},
                {"flags", Value(cpu.flags, IsaFlags)},
                {"isa_level", Value(cpu.isa_level)},
                {"threads", Value(cpu.threads)}}},
              {"glibc", GlibcRelease(host.os.glibc)}};
}

// MIG mode stays: a MIG slice has fewer SMs, and cuBLAS chooses kernels (and split-K
// reductions) by SM count.
json GpuClass(const GpuSection& gpu) {
  json devices = json::array();
  for (const GpuFacts& d : gpu.devices) {
    devices.push_back({{"vendor", d.vendor},
                       {"name", Value(d.name)},
                       {"driver_version", Value(d.driver_version)},
                       {"compute_capability", Value(d.compute_capability)},
                       {"mig_mode", Value(d.mig_mode)}});
  }
  return json{{"cuda_version", Value(gpu.cuda_version)},
              {"rocm_driver_version", Value(gpu.rocm_driver_version)},
              {"devices", devices}};
}

json LibrariesClass(const LibraryHashes& libraries) {
  json out = json::object();
  for (const auto& [name, sha256] : libraries) out[name] = Value(sha256);
  return out;
}

// Without the driver's name, executable path, backend folder, checkout paths and branch
// names: where and under which label a build is installed does not change what it computes.
json EngineClass(const EngineFacts& engine) {
  json checkouts = json::array();
  for (const CheckoutFacts& c : engine.checkouts) {
    checkouts.push_back(Value(c.state, [](const CheckoutState& s) {
      return json{{"commit", s.commit}, {"dirty", s.dirty}};
    }));
  }
  std::sort(checkouts.begin(), checkouts.end());
  return json{{"executable_sha256", Value(engine.executable_sha256)},
              {"metadata", engine.metadata},
              {"backend_libraries", Value(engine.backend_libraries, LibrariesClass)},
              {"checkouts", checkouts}};
}

bool HasEngine(const Fingerprint& fingerprint, const std::string& name) {
  return std::any_of(fingerprint.engines.begin(), fingerprint.engines.end(),
                     [&name](const EngineFacts& e) { return e.name == name; });
}

json EnginesClass(const Fingerprint& fingerprint, const std::string& driver) {
  const bool only_driver = !driver.empty() && HasEngine(fingerprint, driver);
  json out = json::array();
  for (const EngineFacts& engine : fingerprint.engines) {
    if (!only_driver || engine.name == driver) out.push_back(EngineClass(engine));
  }
  std::sort(out.begin(), out.end());
  return out;
}

json ModelsClass(const std::vector<ModelFacts>& models) {
  json out = json::array();
  for (const ModelFacts& model : models) out.push_back(Value(model.sha256));
  std::sort(out.begin(), out.end());
  return out;
}

json FingerprintClass(const Fingerprint& fingerprint, const std::string& driver) {
  return json{{"host", HostClass(fingerprint.host)},
              {"gpu", GpuClass(fingerprint.gpu)},
              {"engines", EnginesClass(fingerprint, driver)},
              {"models", ModelsClass(fingerprint.models)}};
}

// The hello as the driver sent it, less its install paths and a server's run facts; text that is not a JSON object
// is kept as it is.
json HelloClass(const std::string& hello_json) {
  json hello = json::parse(hello_json, nullptr, false);
  if (!hello.is_object()) return json(hello_json);
  if (hello.contains("build") && hello["build"].is_object()) {
    for (const auto& key : kHelloLocalPaths) hello["build"].erase(key);
  }
  if (hello.contains("server") && hello["server"].is_object()) {
    json& server = hello["server"];
    for (const auto& key : kHelloServerRunFacts) server.erase(key);
    // A server's per-slot state (busy or not, tokens cached) is a moment, not a setting.
    if (server.contains("reported") && server["reported"].is_object()) {
      server["reported"].erase("slots");
    }
  }
  // A session driver's warm flag and job count (docs/driver-protocol.md, "Sessions"): a
  // warm job's records equal the same job's run cold, so where in a session it ran is
  // not a fact of its class.
  hello.erase("session");
  // The background load's seed and prompts: the coordinate holds load.concurrency and
  // load.seed already; the prompts drawn from them are not a fact of the machine.
  hello.erase("load");
  return hello;
}

std::string ClassIdOfJson(const std::string& class_json) {
  return "fc-" + Sha256Hex(class_json).substr(0, 32);
}

}  // namespace

std::string RunClassJson(const RunClassFacts& facts) {
  json out = json::object();
  if (facts.host != nullptr) out["host_fingerprint"] = FingerprintClass(*facts.host, facts.driver);
  if (facts.engine != nullptr) {
    out["engine_fingerprint"] = FingerprintClass(*facts.engine, facts.driver);
  }
  if (!facts.hello_json.empty()) out["hello"] = HelloClass(facts.hello_json);
  if (!facts.model_sha256.empty()) out["model_sha256"] = facts.model_sha256;
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string RunClassId(const RunClassFacts& facts) { return ClassIdOfJson(RunClassJson(facts)); }

std::string FingerprintClassId(const Fingerprint& fingerprint) {
  return RunClassId(RunClassFacts{.host = &fingerprint});
}

}  // namespace orch::fingerprint
