#include "fingerprint/cpuinfo_parser.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "fingerprint/isa_level.h"
#include "fingerprint/system_file_parsers.h"

namespace orch::fingerprint {
namespace {

// One "processor" block: key -> value, keys and values trimmed.
using Block = std::map<std::string, std::string>;

std::vector<Block> SplitBlocks(std::string_view text) {
  std::vector<Block> blocks(1);
  std::istringstream lines{std::string(text)};
  for (std::string line; std::getline(lines, line);) {
    auto colon = line.find(':');
    if (TrimSpace(line).empty()) {
      if (!blocks.back().empty()) blocks.emplace_back();
      continue;
    }
    if (colon == std::string::npos) continue;
    std::string key(TrimSpace(std::string_view(line).substr(0, colon)));
    blocks.back()[key] = std::string(TrimSpace(std::string_view(line).substr(colon + 1)));
  }
  if (blocks.back().empty()) blocks.pop_back();
  return blocks;
}

Probed<std::string> Text(const Block& block, const std::string& key) {
  auto it = block.find(key);
  if (it == block.end()) {
    return Probed<std::string>::Unknown("/proc/cpuinfo has no \"" + key + "\"");
  }
  return Probed<std::string>::Known(it->second);
}

Probed<std::int64_t> Number(const Block& block, const std::string& key) {
  Probed<std::string> text = Text(block, key);
  if (!text.known()) return Probed<std::int64_t>::Unknown(text.reason());
  try {
    return Probed<std::int64_t>::Known(std::stoll(text.value(), nullptr, 0));
  } catch (const std::exception&) {
    return Probed<std::int64_t>::Unknown("/proc/cpuinfo \"" + key +
                                         "\" is not a number: " + text.value());
  }
}

// x86 prints "flags", ARM "Features".
Probed<std::vector<std::string>> Flags(const Block& block) {
  Probed<std::string> text = Text(block, "flags");
  if (!text.known()) text = Text(block, "Features");
  if (!text.known()) return Probed<std::vector<std::string>>::Unknown(text.reason());
  std::istringstream words(text.value());
  std::set<std::string> unique;
  for (std::string word; words >> word;) unique.insert(word);
  return Probed<std::vector<std::string>>::Known({unique.begin(), unique.end()});
}

bool IsProcessorBlock(const Block& block) { return block.count("processor") > 0; }

void CountTopology(const std::vector<Block>& processors, CpuFacts& cpu) {
  if (processors.empty()) {
    const char* reason = "/proc/cpuinfo lists no processor";
    cpu.threads = cpu.cores = cpu.sockets = Probed<std::int64_t>::Unknown(reason);
    return;
  }
  cpu.threads = Probed<std::int64_t>::Known(static_cast<std::int64_t>(processors.size()));
  std::set<std::string> sockets;
  std::set<std::pair<std::string, std::string>> cores;
  for (const Block& block : processors) {
    auto socket = block.find("physical id");
    auto core = block.find("core id");
    if (socket == block.end() || core == block.end()) {
      const char* reason = "/proc/cpuinfo has no \"physical id\"/\"core id\"";
      cpu.sockets = Probed<std::int64_t>::Unknown(reason);
      cpu.cores = Probed<std::int64_t>::Unknown(reason);
      return;
    }
    sockets.insert(socket->second);
    cores.emplace(socket->second, core->second);
  }
  cpu.sockets = Probed<std::int64_t>::Known(static_cast<std::int64_t>(sockets.size()));
  cpu.cores = Probed<std::int64_t>::Known(static_cast<std::int64_t>(cores.size()));
}

void DeriveFromFlags(CpuFacts& cpu) {
  if (!cpu.flags.known()) {
    cpu.isa_level = Probed<std::string>::Unknown(cpu.flags.reason());
    cpu.avx512 = cpu.amx = Probed<std::vector<std::string>>::Unknown(cpu.flags.reason());
    return;
  }
  const std::vector<std::string>& flags = cpu.flags.value();
  cpu.isa_level = X86IsaLevel(flags);
  cpu.avx512 = Probed<std::vector<std::string>>::Known(Avx512Subsets(flags));
  cpu.amx = Probed<std::vector<std::string>>::Known(AmxFeatures(flags));
}

}  // namespace

CpuFacts ParseCpuInfo(std::string_view cpuinfo_text) {
  std::vector<Block> blocks = SplitBlocks(cpuinfo_text);
  std::vector<Block> processors;
  std::copy_if(blocks.begin(), blocks.end(), std::back_inserter(processors), IsProcessorBlock);
  const Block first = processors.empty() ? Block{} : processors.front();
  CpuFacts cpu;
  cpu.vendor = Text(first, "vendor_id");
  cpu.model_name = Text(first, "model name");
  cpu.family = Number(first, "cpu family");
  cpu.model = Number(first, "model");
  cpu.stepping = Number(first, "stepping");
  cpu.microcode = Text(first, "microcode");
  cpu.flags = Flags(first);
  DeriveFromFlags(cpu);
  CountTopology(processors, cpu);
  return cpu;
}

}  // namespace orch::fingerprint
