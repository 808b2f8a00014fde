#include "fingerprint/fingerprint_class.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "fingerprint/fingerprint_json.h"
#include "tests/fingerprint/fixture_fingerprints.h"

namespace orch::fingerprint {
namespace {

using Change = std::function<void(Fingerprint&)>;
using Named = std::pair<std::string, Change>;

template <typename T>
Probed<T> Known(T value) {
  return Probed<T>::Known(std::move(value));
}

// The H100 box: two GPUs, one llama.cpp engine with a checkout and a library, one model.
Fingerprint Base() { return testing::H100BoxFingerprint(); }

std::string ClassAfter(const Change& change) {
  Fingerprint fp = Base();
  change(fp);
  return FingerprintClassId(fp);
}

TEST(FingerprintClassTest, IdIsStableAndNamedAsAClass) {
  const std::string id = FingerprintClassId(Base());
  EXPECT_EQ(id.rfind("fc-", 0), 0u);
  EXPECT_EQ(id.size(), 3u + 32u);
  EXPECT_EQ(id, FingerprintClassId(Base()));
  EXPECT_NE(id, FingerprintClassId(testing::SapphireRapidsFingerprint()));
}

TEST(FingerprintClassTest, FieldsThatVaryBetweenIdenticalMachinesShareTheClass) {
  const std::vector<Named> excluded = {
      {"memory", [](Fingerprint& f) { f.host.memory_bytes = Known<std::int64_t>(1); }},
      {"numa", [](Fingerprint& f) { f.host.numa_nodes = Known<std::int64_t>(8); }},
      {"microcode", [](Fingerprint& f) { f.host.cpu.microcode = Known<std::string>("0x1"); }},
      {"sockets", [](Fingerprint& f) { f.host.cpu.sockets = Known<std::int64_t>(9); }},
      {"cores", [](Fingerprint& f) { f.host.cpu.cores = Known<std::int64_t>(99); }},
      {"os name", [](Fingerprint& f) { f.host.os.name = Known<std::string>("Other OS"); }},
      {"os id", [](Fingerprint& f) { f.host.os.id = Known<std::string>("ubuntu 24.04"); }},
      {"kernel", [](Fingerprint& f) { f.host.os.kernel_release = Known<std::string>("6.9"); }},
      {"kernel version",
       [](Fingerprint& f) { f.host.os.kernel_version = Known<std::string>("#2 SMP"); }},
      {"container",
       [](Fingerprint& f) { f.host.virtualization.container = Known<std::string>("docker"); }},
      {"hypervisor", [](Fingerprint& f) { f.host.virtualization.hypervisor = Known(true); }},
      {"dmi", [](Fingerprint& f) { f.host.virtualization.sys_vendor = Known<std::string>("X"); }},
      {"hypervisor flag",
       [](Fingerprint& f) {
         std::vector<std::string> flags = f.host.cpu.flags.value();
         flags.push_back("hypervisor");
         f.host.cpu.flags = Known(flags);
       }},
      {"gpu uuid", [](Fingerprint& f) { f.gpu.devices[0].uuid = Known<std::string>("GPU-x"); }},
      {"gpu pci", [](Fingerprint& f) { f.gpu.devices[1].pci_bus_id = Known<std::string>("0"); }},
      {"gpu clock",
       [](Fingerprint& f) { f.gpu.devices[0].max_sm_clock = Known<std::string>("1"); }},
      {"gpu power", [](Fingerprint& f) { f.gpu.devices[0].power_limit = Known<std::string>("1"); }},
      {"gpu memory",
       [](Fingerprint& f) { f.gpu.devices[0].memory_total = Known<std::string>("1 MiB"); }},
      {"vbios", [](Fingerprint& f) { f.gpu.devices[0].vbios_version = Known<std::string>("1"); }},
      {"ecc", [](Fingerprint& f) { f.gpu.devices[0].ecc_mode = Known<std::string>("Disabled"); }},
      {"persistence",
       [](Fingerprint& f) { f.gpu.devices[0].persistence_mode = Known<std::string>("Off"); }},
      {"kernel module",
       [](Fingerprint& f) { f.gpu.nvidia_kernel_module = Known<std::string>("other build"); }},
      {"unknown reason",
       [](Fingerprint& f) { f.gpu.rocm_driver_version = Probed<std::string>::Unknown("timeout"); }},
      {"engine name", [](Fingerprint& f) { f.engines[0].name = "my-cuda"; }},
      {"executable path", [](Fingerprint& f) { f.engines[0].executable = "/home/a/driver"; }},
      {"backend dir", [](Fingerprint& f) { f.engines[0].backend_dir = "/home/a/lib"; }},
      {"checkout path", [](Fingerprint& f) { f.engines[0].checkouts[0].path = "/home/a/src"; }},
      {"branch and describe",
       [](Fingerprint& f) {
         CheckoutState s = f.engines[0].checkouts[0].state.value();
         s.branch = "mine";
         s.describe = "v1-3-gabc";
         s.detached = true;
         f.engines[0].checkouts[0].state = Known(s);
       }},
      {"model path", [](Fingerprint& f) { f.models[0].path = "/home/a/model.gguf"; }},
      {"model size", [](Fingerprint& f) { f.models[0].size_bytes = Known<std::int64_t>(1); }},
  };
  const std::string base = FingerprintClassId(Base());
  for (const auto& [name, change] : excluded) {
    Fingerprint changed = Base();
    change(changed);
    EXPECT_NE(FingerprintId(changed), FingerprintId(Base())) << name << " changed nothing";
    EXPECT_EQ(FingerprintClassId(changed), base) << name;
  }
}

TEST(FingerprintClassTest, EachIncludedFieldChangesTheClass) {
  const std::vector<Named> included = {
      {"vendor", [](Fingerprint& f) { f.host.cpu.vendor = Known<std::string>("AuthenticAMD"); }},
      {"model name", [](Fingerprint& f) { f.host.cpu.model_name = Known<std::string>("EPYC"); }},
      {"family", [](Fingerprint& f) { f.host.cpu.family = Known<std::int64_t>(25); }},
      {"model", [](Fingerprint& f) { f.host.cpu.model = Known<std::int64_t>(1); }},
      {"stepping", [](Fingerprint& f) { f.host.cpu.stepping = Known<std::int64_t>(99); }},
      {"flags",
       [](Fingerprint& f) {
         std::vector<std::string> flags = f.host.cpu.flags.value();
         flags.pop_back();
         f.host.cpu.flags = Known(flags);
       }},
      {"isa level", [](Fingerprint& f) { f.host.cpu.isa_level = Known<std::string>("x86-64-v3"); }},
      {"threads", [](Fingerprint& f) { f.host.cpu.threads = Known<std::int64_t>(999); }},
      {"glibc release",
       [](Fingerprint& f) { f.host.os.glibc = Known<std::string>("2.39 (Ubuntu GLIBC 2.39)"); }},
      {"gpu name", [](Fingerprint& f) { f.gpu.devices[0].name = Known<std::string>("H200"); }},
      {"gpu count", [](Fingerprint& f) { f.gpu.devices.pop_back(); }},
      {"compute capability",
       [](Fingerprint& f) { f.gpu.devices[0].compute_capability = Known<std::string>("8.0"); }},
      {"gpu driver",
       [](Fingerprint& f) { f.gpu.devices[1].driver_version = Known<std::string>("535.1"); }},
      {"mig", [](Fingerprint& f) { f.gpu.devices[0].mig_mode = Known<std::string>("Enabled"); }},
      {"cuda", [](Fingerprint& f) { f.gpu.cuda_version = Known<std::string>("12.2"); }},
      {"rocm", [](Fingerprint& f) { f.gpu.rocm_driver_version = Known<std::string>("6.1"); }},
      {"executable hash",
       [](Fingerprint& f) { f.engines[0].executable_sha256 = Known(std::string(64, 'e')); }},
      {"engine metadata", [](Fingerprint& f) { f.engines[0].metadata["build"] = "b9999"; }},
      {"backend library",
       [](Fingerprint& f) {
         f.engines[0].backend_libraries =
             Known(LibraryHashes{{"libggml-cuda.so", Known(std::string(64, '9'))}});
       }},
      {"checkout commit",
       [](Fingerprint& f) {
         CheckoutState s = f.engines[0].checkouts[0].state.value();
         s.commit = std::string(40, 'f');
         f.engines[0].checkouts[0].state = Known(s);
       }},
      {"checkout dirty",
       [](Fingerprint& f) {
         CheckoutState s = f.engines[0].checkouts[0].state.value();
         s.dirty = true;
         f.engines[0].checkouts[0].state = Known(s);
       }},
      {"model hash", [](Fingerprint& f) { f.models[0].sha256 = Known(std::string(64, 'a')); }},
      {"a known fact unknown",
       [](Fingerprint& f) { f.host.cpu.model_name = Probed<std::string>::Unknown("denied"); }},
  };
  const std::string base = FingerprintClassId(Base());
  for (const auto& [name, change] : included) EXPECT_NE(ClassAfter(change), base) << name;
}

TEST(FingerprintClassTest, OnlyTheRunsOwnEngineCountsWhenItsDriverIsNamed) {
  Fingerprint host = Base();
  Fingerprint more = host;
  EngineFacts torch;
  torch.name = "torch";
  torch.executable_sha256 = Known(std::string(64, '7'));
  more.engines.push_back(torch);
  RunClassFacts llama{.host = &host, .driver = "llamacpp"};
  RunClassFacts llama_on_more{.host = &more, .driver = "llamacpp"};
  EXPECT_EQ(RunClassId(llama), RunClassId(llama_on_more));
  // Without the driver's name every engine counts.
  EXPECT_NE(RunClassId({.host = &host}), RunClassId({.host = &more}));
  // A driver the fingerprint does not know: every engine counts as well.
  EXPECT_NE(RunClassId({.host = &host, .driver = "gone"}),
            RunClassId({.host = &more, .driver = "gone"}));
}

TEST(FingerprintClassTest, TheHelloCountsWithoutItsInstallPaths) {
  const std::string hello =
      R"({"engine":"llama.cpp","version":"b8390","commit":"b10e","kernel_path":"cpu: x64",)"
      R"("build":{"compiler":"gcc 12","library_dir":"/opt/a","backend_file":"/opt/a/x.so"},)"
      R"("hardware":["CPU: Intel N150"]})";
  auto id = [](std::string text) { return RunClassId({.hello_json = std::move(text)}); };
  const std::string base = id(hello);
  std::string moved = hello;
  moved.replace(moved.find("/opt/a\""), 6, "/home/b/lib");
  moved.replace(moved.find("/opt/a/x.so"), 11, "/home/b/lib/x.so");
  EXPECT_EQ(id(moved), base);
  for (const auto& [from, to] :
       std::vector<std::pair<std::string, std::string>>{{"b8390", "b8391"},
                                                        {"b10e", "c20f"},
                                                        {"cpu: x64", "cpu: haswell"},
                                                        {"gcc 12", "gcc 13"},
                                                        {"Intel N150", "AMD EPYC"}}) {
    std::string changed = hello;
    changed.replace(changed.find(from), from.size(), to);
    EXPECT_NE(id(changed), base) << from;
  }
}

TEST(FingerprintClassTest, AServersURLLogJobCountSlotStateAndLoadAreNotPartOfTheClass) {
  const std::string hello =
      R"({"engine":"llama-server","version":"b8390","server":{"url":"http://127.0.0.1:33851",)"
      R"("log":"/spool/servers/a-1.log","jobs_before":0,"mode":"launched",)"
      R"("coordinate":{"slots":"1"},"reported":{"total_slots":1,)"
      R"("slots":[{"id":0,"is_processing":false}]}},)"
      R"("load":{"concurrency":4,"seed":17,"prompts":["ab12"]}})";
  auto id = [](std::string text) { return RunClassId({.hello_json = std::move(text)}); };
  const std::string base = id(hello);
  std::string elsewhere = hello;
  elsewhere.replace(elsewhere.find("33851"), 5, "40001");
  elsewhere.replace(elsewhere.find("a-1.log"), 7, "a-2.log");
  elsewhere.replace(elsewhere.find("\"jobs_before\":0"), 15, "\"jobs_before\":7");
  elsewhere.replace(elsewhere.find("\"is_processing\":false"), 21, "\"is_processing\":true");
  elsewhere.replace(elsewhere.find("\"seed\":17"), 9, "\"seed\":18");
  elsewhere.replace(elsewhere.find("ab12"), 4, "cd34");
  EXPECT_EQ(id(elsewhere), base);
  for (const auto& [from, to] :
       std::vector<std::pair<std::string, std::string>>{{"\"slots\":\"1\"", "\"slots\":\"4\""},
                                                        {"\"total_slots\":1", "\"total_slots\":4"},
                                                        {"launched", "attached"}}) {
    std::string changed = hello;
    changed.replace(changed.find(from), from.size(), to);
    EXPECT_NE(id(changed), base) << from;
  }
}

TEST(FingerprintClassTest, AWarmSessionsFlagAndJobCountAreNotPartOfTheClass) {
  auto id = [](std::string text) { return RunClassId({.hello_json = std::move(text)}); };
  const std::string cold = R"({"engine":"llama.cpp","version":"b8390"})";
  const std::string first =
      R"({"engine":"llama.cpp","version":"b8390","session":{"warm":false,"jobs_before":0}})";
  const std::string warm =
      R"({"engine":"llama.cpp","version":"b8390","session":{"warm":true,"jobs_before":41}})";
  EXPECT_EQ(id(first), id(cold));
  EXPECT_EQ(id(warm), id(cold));
  EXPECT_NE(id(R"({"engine":"llama.cpp","version":"b8391","session":{"warm":true}})"), id(warm));
}

TEST(FingerprintClassTest, EngineFingerprintAndLoadedModelCount) {
  Fingerprint host = Base();
  Fingerprint engine = testing::SapphireRapidsFingerprint();
  const std::string host_only = RunClassId({.host = &host});
  EXPECT_EQ(host_only, FingerprintClassId(host));
  EXPECT_NE(RunClassId({.host = &host, .engine = &engine}), host_only);
  EXPECT_NE(RunClassId({.host = &host, .model_sha256 = std::string(64, 'b')}), host_only);
  EXPECT_NE(RunClassId({.host = &host, .model_sha256 = std::string(64, 'b')}),
            RunClassId({.host = &host, .model_sha256 = std::string(64, 'c')}));
}

}  // namespace
}  // namespace orch::fingerprint
