#include "drivers/llamacpp/tool_commands.h"

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "drivers/llamacpp/model_file.h"
#include "llama.h"

namespace orch::drivers::llamacpp {

using nlohmann::json;

json AcceleratorsJson(const std::vector<AcceleratorBackend>& accelerators) {
  json out = json::array();
  for (const AcceleratorBackend& a : accelerators) {
    json one = {{"file", a.file}, {"loaded", a.loaded}};
    if (!a.loaded) one["why"] = a.why;
    out.push_back(one);
  }
  return out;
}

int QuantizeCommand(int argc, char** argv) {
  if (argc < 5 || argc > 6) {
    std::fprintf(stderr, "usage: %s quantize IN OUT TYPE [THREADS]\n", argv[0]);
    return kExitInvalid;
  }
  llama_backend_init();
  int threads = argc == 6 ? std::atoi(argv[5]) : 0;
  Status status = QuantizeModel(argv[2], argv[3], argv[4], threads);
  if (!status.ok()) {
    std::fprintf(stderr, "%s quantize: %s\n", argv[0], status.message().c_str());
    return status.code() == StatusCode::kInvalidArgument ? kExitInvalid : kExitEngine;
  }
  return 0;
}

int VariantsCommand() {
  json variants = json::array();
  for (const auto& v : ScoreCpuVariants(EngineLibraryDir()))
    variants.push_back({{"variant", v.variant}, {"score", v.score}, {"path", v.path}});
  std::cout << variants.dump(1) << "\n";
  return 0;
}

int AcceleratorsCommand(int argc, char** argv) {
  std::string dir = argc == 3 ? argv[2] : EngineLibraryDir();
  std::vector<AcceleratorBackend> loaded = LoadAcceleratorBackends(dir);
  std::cout << json{{"dir", dir},
                    {"accelerators", AcceleratorsJson(loaded)},
                    {"devices", DeviceNames()},
                    {"gpu_devices", GpuDeviceCount()}}
                   .dump(1)
            << "\n";
  return 0;
}

}  // namespace orch::drivers::llamacpp
