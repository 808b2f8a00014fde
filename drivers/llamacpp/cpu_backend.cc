#include "drivers/llamacpp/cpu_backend.h"

#include <dlfcn.h>

#include <algorithm>
#include <filesystem>

#include "ggml-backend.h"
#include "llama.h"

namespace orch::drivers::llamacpp {
namespace {

constexpr std::string_view kPrefix = "libggml-cpu-";
constexpr std::string_view kSuffix = ".so";

int VariantScoreOf(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return 0;
  using ScoreFn = int (*)();
  auto score = reinterpret_cast<ScoreFn>(dlsym(handle, "ggml_backend_score"));
  int value = score != nullptr ? score() : 0;
  dlclose(handle);
  return value;
}

std::string Names(const std::vector<VariantScore>& variants, bool runnable) {
  std::string text;
  for (const VariantScore& v : variants) {
    if ((v.score > 0) != runnable) continue;
    text += (text.empty() ? "" : ", ") + v.variant;
  }
  return text.empty() ? "none" : text;
}

}  // namespace

std::vector<AcceleratorBackend> LoadAcceleratorBackends(const std::string& dir) {
  std::vector<std::filesystem::path> files;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("libggml-", 0) != 0 || name.rfind(kPrefix, 0) == 0 ||
        name == "libggml-base.so" || !name.ends_with(kSuffix))
      continue;
    files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<AcceleratorBackend> out;
  for (const std::filesystem::path& path : files) {
    AcceleratorBackend backend{path.filename().string(), false, ""};
    // dlopen first for the loader's own words (ggml's load only logs them).
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = dlerror();
      backend.why = why != nullptr ? why : "dlopen failed";
    } else {
      backend.loaded = ggml_backend_load(path.c_str()) != nullptr;
      if (!backend.loaded) backend.why = "not a ggml backend, or its initialisation failed";
      dlclose(handle);  // ggml holds its own handle
    }
    out.push_back(std::move(backend));
  }
  return out;
}

std::vector<std::string> DeviceNames() {
  std::vector<std::string> devices;
  for (std::size_t i = 0; i < ggml_backend_dev_count(); ++i) {
    ggml_backend_dev_t device = ggml_backend_dev_get(i);
    devices.push_back(std::string(ggml_backend_dev_name(device)) + ": " +
                      ggml_backend_dev_description(device));
  }
  return devices;
}

int GpuDeviceCount() {
  int count = 0;
  for (std::size_t i = 0; i < ggml_backend_dev_count(); ++i) {
    enum ggml_backend_dev_type type = ggml_backend_dev_type(ggml_backend_dev_get(i));
    if (type == GGML_BACKEND_DEVICE_TYPE_GPU || type == GGML_BACKEND_DEVICE_TYPE_IGPU) ++count;
  }
  return count;
}

std::string DescribeAccelerators(const std::vector<AcceleratorBackend>& accelerators) {
  std::string text;
  for (const AcceleratorBackend& a : accelerators) {
    text += (text.empty() ? "" : "; ") + a.file +
            (a.loaded ? ": loaded" : ": not loaded (" + a.why + ")");
  }
  return text.empty() ? "none" : text;
}

Status NoGpuDevice(const std::string& hardware, const LoadedBackend& backend,
                   const std::string& dir) {
  std::string hint =
      backend.accelerators.empty()
          ? "the llama.cpp build in " + dir +
                " has no accelerator backend file (libggml-cuda.so, ...); a GPU host installs "
                "the CUDA build with scripts/setup-engines --cuda"
          : "the accelerator backends of the llama.cpp build in " + dir + ": " +
                DescribeAccelerators(backend.accelerators);
  return Status(StatusCode::kFailedPrecondition,
                "hardware = \"" + hardware + "\": no GPU device here; " + hint);
}

std::string EngineLibraryDir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&llama_backend_init), &info) == 0 || info.dli_fname == nullptr)
    return "";
  return std::filesystem::path(info.dli_fname).parent_path().string();
}

std::vector<VariantScore> ScoreCpuVariants(const std::string& dir) {
  std::vector<VariantScore> variants;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    std::string name = entry.path().filename().string();
    if (name.rfind(kPrefix, 0) != 0 || !name.ends_with(kSuffix)) continue;
    std::string variant =
        name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
    variants.push_back({variant, entry.path().string(), VariantScoreOf(entry.path().string())});
  }
  std::sort(variants.begin(), variants.end(),
            [](const VariantScore& a, const VariantScore& b) { return a.variant < b.variant; });
  return variants;
}

// The CPU backend `cpu` (loaded), then the build's accelerator backends and the devices
// they all registered.
LoadedBackend WithAccelerators(LoadedBackend cpu, const std::string& dir) {
  cpu.accelerators = LoadAcceleratorBackends(dir);
  cpu.devices = DeviceNames();
  return cpu;
}

Result<LoadedBackend> LoadCpuBackend(const std::string& name) {
  const std::string dir = EngineLibraryDir();
  // A named variant that runs here needs only its own file scored.
  if (name != "best") {
    std::string path = dir + "/" + std::string(kPrefix) + name + std::string(kSuffix);
    int score = VariantScoreOf(path);
    if (score > 0 && ggml_backend_load(path.c_str()) != nullptr) {
      return WithAccelerators({.variant = name, .path = path, .score = score}, dir);
    }
  }
  std::vector<VariantScore> variants = ScoreCpuVariants(dir);
  if (variants.empty()) {
    // A build with the CPU backend linked in (a user's own llama.cpp build).
    if (name != "best") {
      return Status(StatusCode::kFailedPrecondition,
                    "cpu_backend = \"" + name + "\": the engine in " + dir +
                        " has no CPU kernel variant files (libggml-cpu-*.so)");
    }
    return WithAccelerators(LoadedBackend{}, dir);
  }
  const VariantScore* chosen = nullptr;
  for (const VariantScore& v : variants) {
    if (name == "best" ? (v.score > 0 && (chosen == nullptr || v.score > chosen->score))
                       : v.variant == name)
      chosen = &v;
  }
  if (chosen == nullptr && name != "best") {
    return Status(StatusCode::kFailedPrecondition,
                  "cpu_backend = \"" + name + "\": no libggml-cpu-" + name + ".so in " + dir +
                      " (variants: " + Names(variants, true) + ", " + Names(variants, false) + ")");
  }
  if (chosen == nullptr || chosen->score == 0) {
    return Status(
        StatusCode::kFailedPrecondition,
        "cpu_backend = \"" + name +
            "\" cannot run on this CPU (score 0); variants that can: " + Names(variants, true));
  }
  if (ggml_backend_load(chosen->path.c_str()) == nullptr) {
    return Internal("cpu_backend = \"" + name + "\": loading " + chosen->path + " failed");
  }
  return WithAccelerators(
      {.variant = chosen->variant, .path = chosen->path, .score = chosen->score}, dir);
}

}  // namespace orch::drivers::llamacpp
