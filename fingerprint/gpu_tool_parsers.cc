#include "fingerprint/gpu_tool_parsers.h"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/strings.h"
#include "fingerprint/system_file_parsers.h"

namespace orch::fingerprint {
namespace {

constexpr const char* kNvidiaFields[] = {"name",
                                         "uuid",
                                         "driver_version",
                                         "compute_cap",
                                         "memory.total",
                                         "vbios_version",
                                         "pci.bus_id",
                                         "clocks.max.sm",
                                         "power.limit",
                                         "ecc.mode.current",
                                         "persistence_mode",
                                         "mig.mode.current"};
constexpr std::size_t kNvidiaFieldCount = std::size(kNvidiaFields);

Probed<std::string> SmiValue(std::string_view raw) {
  std::string value(TrimSpace(raw));
  if (value.empty()) return Probed<std::string>::Unknown("nvidia-smi printed nothing");
  if (value.front() == '[' || value == "N/A") {
    return Probed<std::string>::Unknown("nvidia-smi reports " + value);
  }
  return Probed<std::string>::Known(value);
}

std::vector<std::string_view> SplitCsv(std::string_view line) {
  std::vector<std::string_view> cells;
  for (std::size_t comma; (comma = line.find(',')) != std::string_view::npos;) {
    cells.push_back(line.substr(0, comma));
    line.remove_prefix(comma + 1);
  }
  cells.push_back(line);
  return cells;
}

Result<GpuFacts> ParseNvidiaLine(std::string_view line) {
  std::vector<std::string_view> cells = SplitCsv(line);
  if (cells.size() != kNvidiaFieldCount) {
    return InvalidArgument("expected " + std::to_string(kNvidiaFieldCount) + " columns, got " +
                           std::to_string(cells.size()) + ": " + std::string(line));
  }
  GpuFacts gpu;
  gpu.vendor = "nvidia";
  Probed<std::string>* fields[] = {
      &gpu.name,         &gpu.uuid,          &gpu.driver_version,   &gpu.compute_capability,
      &gpu.memory_total, &gpu.vbios_version, &gpu.pci_bus_id,       &gpu.max_sm_clock,
      &gpu.power_limit,  &gpu.ecc_mode,      &gpu.persistence_mode, &gpu.mig_mode};
  for (std::size_t i = 0; i < kNvidiaFieldCount; ++i) *fields[i] = SmiValue(cells[i]);
  return gpu;
}

// rocm-smi changed key capitalisation between releases ("Card series"/"Card Series").
Probed<std::string> RocmValue(const nlohmann::json& card, std::string_view key) {
  for (const auto& [name, value] : card.items()) {
    if (Lower(name) != key) continue;
    std::string text = value.is_string() ? value.get<std::string>() : value.dump();
    if (text.empty() || text == "N/A") break;
    return Probed<std::string>::Known(text);
  }
  return Probed<std::string>::Unknown("rocm-smi does not report \"" + std::string(key) + "\"");
}

GpuFacts ParseRocmCard(const nlohmann::json& card, const Probed<std::string>& driver) {
  GpuFacts gpu;
  gpu.vendor = "amd";
  gpu.name = RocmValue(card, "card series");
  gpu.uuid = RocmValue(card, "unique id");
  gpu.driver_version = driver;
  gpu.compute_capability = RocmValue(card, "gfx version");
  gpu.memory_total = RocmValue(card, "vram total memory (b)");
  if (gpu.memory_total.known()) {
    gpu.memory_total = Probed<std::string>::Known(gpu.memory_total.value() + " B");
  }
  gpu.vbios_version = RocmValue(card, "vbios version");
  gpu.pci_bus_id = RocmValue(card, "pci bus");
  const auto not_reported = Probed<std::string>::Unknown("not reported by rocm-smi");
  gpu.max_sm_clock = gpu.power_limit = gpu.ecc_mode = not_reported;
  gpu.persistence_mode = gpu.mig_mode = not_reported;
  return gpu;
}

int CardNumber(const std::string& key) { return std::atoi(key.c_str() + 4); }

}  // namespace

std::string NvidiaSmiQueryFields() {
  std::string joined;
  for (const char* field : kNvidiaFields) {
    if (!joined.empty()) joined += ',';
    joined += field;
  }
  return joined;
}

Result<std::vector<GpuFacts>> ParseNvidiaSmiCsv(std::string_view csv) {
  std::vector<GpuFacts> gpus;
  std::istringstream lines{std::string(csv)};
  for (std::string line; std::getline(lines, line);) {
    if (TrimSpace(line).empty()) continue;
    ORCH_ASSIGN_OR_RETURN(GpuFacts gpu, ParseNvidiaLine(line));
    gpus.push_back(std::move(gpu));
  }
  return gpus;
}

Result<std::string> ParseNvidiaCudaVersion(std::string_view text) {
  std::istringstream lines{std::string(text)};
  for (std::string line; std::getline(lines, line);) {
    for (std::string_view key : {"CUDA Version", "CUDA Driver Version"}) {
      auto at = line.find(key);
      if (at == std::string::npos) continue;
      std::string_view rest = std::string_view(line).substr(at + key.size());
      while (!rest.empty() && (rest.front() == ' ' || rest.front() == ':')) {
        rest.remove_prefix(1);
      }
      std::string_view version = rest.substr(0, rest.find_first_not_of("0123456789."));
      if (!version.empty()) return std::string(version);
    }
  }
  return InvalidArgument("no CUDA version in nvidia-smi output");
}

Result<std::vector<GpuFacts>> ParseRocmSmiJson(std::string_view json,
                                               std::string* rocm_driver_version) {
  nlohmann::json root = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!root.is_object()) return InvalidArgument("rocm-smi output is not a JSON object");
  Probed<std::string> driver = Probed<std::string>::Unknown("rocm-smi reports no driver");
  if (root.contains("system") && root["system"].is_object()) {
    driver = RocmValue(root["system"], "driver version");
  }
  if (driver.known() && rocm_driver_version != nullptr) {
    *rocm_driver_version = driver.value();
  }
  std::vector<std::pair<int, GpuFacts>> cards;
  for (const auto& [key, card] : root.items()) {
    if (key.starts_with("card") && card.is_object()) {
      cards.emplace_back(CardNumber(key), ParseRocmCard(card, driver));
    }
  }
  std::sort(cards.begin(), cards.end(),
            [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<GpuFacts> gpus;
  for (auto& [number, gpu] : cards) gpus.push_back(std::move(gpu));
  return gpus;
}

}  // namespace orch::fingerprint
