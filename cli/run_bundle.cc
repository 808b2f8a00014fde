#include "cli/run_bundle.h"

#include <chrono>
#include <ctime>
#include <filesystem>
#include <iostream>

#include "bundle/result_bundle.h"
#include "cli/command.h"
#include "cli/files.h"
#include "plan_document/plan_json.h"
#include "protocol/identity_key.h"
#include "store/rocksdb_store.h"

namespace orch::cli::run_local {
namespace {

namespace fs = std::filesystem;

// --- offline mode: a plan bundle in, a signed result bundle out (docs/bundles.md) ---

int64_t WallNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string UtcDate(int64_t ms) {
  std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M UTC", &tm);
  return text;
}

// A contributor key's sequence number file: NAME.sequence beside NAME.key_secret.
std::string SequenceFile(const std::string& key_file) {
  fs::path path(key_file);
  return (path.parent_path() / (path.stem().string() + ".sequence")).string();
}

Result<uint64_t> LastSequence(const std::string& file) {
  std::error_code ec;
  if (!fs::exists(file, ec)) return uint64_t{0};
  ORCH_ASSIGN_OR_RETURN(std::string text, ReadFile(file));
  try {
    size_t used = 0;
    uint64_t value = std::stoull(text, &used);
    if (text.find_first_not_of(" \n", used) == std::string::npos) return value;
  } catch (const std::exception&) {
  }
  return InvalidArgument(file +
                         ": not a sequence number (it holds the number of the last "
                         "result bundle this key signed)");
}

// The engine a plan job requires; "" when the job does not say.
std::string EngineOf(const plan_document::Document& plan, const plan_document::Job& job) {
  if (job.requirements >= plan.requirements.size()) return "";
  return plan.requirements[job.requirements].engine;
}

// The plan's jobs whose engine has a driver here; `skipped` gets the others' engines.
Result<std::string> KeepRunnable(plan_document::Document plan,
                                 const std::map<std::string, std::string>& drivers,
                                 std::set<std::string>& skipped, int& kept) {
  plan_document::KeepJobs(plan, [&](const plan_document::Job& job) {
    std::string engine = EngineOf(plan, job);
    if (drivers.count(engine) > 0) return true;
    skipped.insert(engine);
    return false;
  });
  kept = static_cast<int>(plan.jobs.size());
  return plan_document::WritePlanJson(plan);
}

// Writes the result bundle of what the local store holds; false when it could not.
bool WriteResults(const RunOptions& options, const bundle::PlanBundle& plan,
                  const protocol::SecretIdentity& key) {
  Result<std::unique_ptr<store::Store>> store = store::OpenRocksDbStore(
      store::RocksDbPathInDataDir(fs::absolute(options.data_dir).string()), {});
  if (!store.ok()) {
    Fail("read the results: " + store.status().message(), kExitError);
    return false;
  }
  std::string sequence_file = SequenceFile(options.key);
  Result<uint64_t> last = LastSequence(sequence_file);
  if (!last.ok()) {
    Fail(last.status().message(), kExitError);
    return false;
  }
  Result<bundle::WrittenResults> written =
      bundle::WriteResultBundle(**store, plan, *last + 1, WallNowMs(), key);
  if (!written.ok()) {
    Fail("write the result bundle: " + written.status().message(), kExitError);
    return false;
  }
  if (written->runs == 0) {
    std::cout << "orch run: no job of the bundle has finished yet; no result bundle written\n";
    return true;
  }
  std::string out = options.results.empty()
                        ? fs::path(options.bundle).stem().string() + ".results.orchb"
                        : options.results;
  // The sequence number is spent before the bundle exists: a crash between the two
  // skips a number, which is harmless; reusing one would make the next bundle a replay.
  Status seq = WriteFileAtomically(sequence_file, std::to_string(*last + 1) + "\n");
  Status file = seq.ok() ? WriteFileAtomically(out, written->file) : seq;
  if (!file.ok()) {
    Fail(file.message(), kExitError);
    return false;
  }
  std::cout << "orch run: wrote " << out << ": " << written->runs << " of " << plan.job_ids.size()
            << " jobs of " << plan.experiment << ", signed by " << key.identity.name
            << " (sequence " << *last + 1 << ")";
  if (!written->missing_jobs.empty()) {
    std::cout << "; " << written->missing_jobs.size() << " not run here";
  }
  std::cout << "\norch run: send it to the lab, which imports it with: orch import " << out << "\n";
  return true;
}

// The plan bundle of --bundle, read and checked: its signature (and, with
// --coordinator-key, that the lab signed it) and that it has not expired.
Result<bundle::PlanBundle> OpenPlanBundle(const RunOptions& options) {
  ORCH_ASSIGN_OR_RETURN(std::string bytes,
                        ReadRegularFile(options.bundle, std::uint64_t{64} << 20));
  ORCH_ASSIGN_OR_RETURN(bundle::PlanBundle plan, bundle::ReadPlanBundle(bytes, options.bundle));
  if (!options.coordinator_key.empty()) {
    ORCH_ASSIGN_OR_RETURN(protocol::PublicIdentity lab,
                          protocol::ReadPublicKeyFile(options.coordinator_key));
    if (lab.sign_public != plan.coordinator.sign_public) {
      return InvalidArgument("the plan bundle is signed by " + plan.coordinator.name +
                             " (ed25519 " + plan.coordinator.sign_public +
                             "), not by the coordinator key " + options.coordinator_key +
                             ": do not run it");
    }
  } else {
    std::cout << "orch run: the plan bundle is signed by " << plan.coordinator.name << " (ed25519 "
              << plan.coordinator.sign_public
              << "); pass --coordinator-key to check that it is your lab's\n";
  }
  if (WallNowMs() > plan.expires_at_ms) {
    return InvalidArgument("the plan bundle expired on " + UtcDate(plan.expires_at_ms) +
                           "; its results would be refused. Ask the lab for a new one "
                           "(orch export " +
                           plan.experiment + ")");
  }
  return plan;
}

// The plan bundle's plan with only the jobs whose engine has a driver here (`drivers`
// gets them); says which engines are left to other rigs.
Result<std::string> RunnablePlan(const RunOptions& options, const bundle::PlanBundle& plan,
                                 std::map<std::string, std::string>& drivers) {
  ORCH_ASSIGN_OR_RETURN(drivers, ParseDrivers(options.drivers));
  Result<plan_document::Document> parsed = plan_document::ReadPlanJson(plan.plan_json);
  if (!parsed.ok()) {
    return InvalidArgument("the plan bundle's plan is not an orch.plan/1 document: " +
                           parsed.status().message());
  }
  std::set<std::string> engines;
  for (const plan_document::Job& job : parsed->jobs) {
    if (std::string engine = EngineOf(*parsed, job); !engine.empty()) engines.insert(engine);
  }
  for (const std::string& engine : engines) {
    std::set<std::string> one{engine};
    if (!ResolveDrivers(one, drivers).ok()) {
      std::cout << "orch run: no driver for engine " << engine
                << " here: its jobs are left to other rigs (--driver " << engine
                << "=EXECUTABLE runs them)\n";
    }
  }
  std::set<std::string> skipped;
  int kept = 0;
  ORCH_ASSIGN_OR_RETURN(std::string runnable,
                        KeepRunnable(std::move(parsed).value(), drivers, skipped, kept));
  if (kept == 0)
    return InvalidArgument(
        "this machine has a driver for none of the bundle's "
        "engines");
  std::cout << "orch run: " << kept << " of " << plan.job_ids.size() << " jobs of "
            << plan.experiment << " from the bundle run here\n";
  return runnable;
}

// Runs `plan_json` on a local coordinator and agents; the exit status of Drive.
int RunOnThisMachine(const RunOptions& options, const std::string& experiment,
                     const std::string& plan_json,
                     const std::map<std::string, std::string>& drivers) {
  std::set<std::string> engines;
  for (const auto& [engine, driver] : drivers) engines.insert(engine);
  Result<std::vector<LocalServer>> servers = ResolveServers(engines, options.servers);
  if (!servers.ok()) return Fail(servers.status().message(), kExitInvalidInput);
  LocalAgentSpec agent_spec{
      options.hardware, {}, 0, {drivers.begin(), drivers.end()}, std::move(*servers)};
  for (const std::string& dir : options.model_dirs)
    agent_spec.model_dirs.push_back(fs::absolute(dir).lexically_normal().string());
  int agents = options.agents > 0 ? options.agents : 1;
  fs::path data_dir = fs::absolute(options.data_dir);
  LocalSystem system(data_dir.string(), (data_dir / "local").string());
  if (Status s = system.MakeKeys(agents); !s.ok()) return Fail(s.message(), kExitError);
  Result<std::string> endpoint = system.Start(SelfPath(), agents, agent_spec);
  if (!endpoint.ok()) return Fail(endpoint.status().message(), kExitError);
  ClientOptions client{*endpoint, 10, system.admin_key(), system.coordinator_public_key()};
  std::cout << "orch run: " << agents << (agents == 1 ? " agent (--agents N for more)" : " agents")
            << ", logs in " << system.run_dir() << std::endl;
  int code = Drive(system, client, experiment, plan_json, options, agents);
  system.Stop();
  return code;
}

}  // namespace

int RunBundle(const RunOptions& options) {
  InstallStopSignals();
  if (options.key.empty()) {
    return Fail(
        "--bundle needs --key: the contributor's secret key file that signs the "
        "results (make one with: orch keygen NAME --role contributor)",
        kExitInvalidInput);
  }
  Result<protocol::SecretIdentity> key = protocol::ReadSecretKeyFile(options.key);
  if (!key.ok()) return Fail(key.status().message(), kExitInvalidInput);
  Result<bundle::PlanBundle> plan = OpenPlanBundle(options);
  if (!plan.ok()) return Fail(plan.status().message(), kExitInvalidInput);
  if (options.write_results_only) return WriteResults(options, *plan, *key) ? kExitOk : kExitError;
  std::map<std::string, std::string> drivers;
  Result<std::string> runnable = RunnablePlan(options, *plan, drivers);
  if (!runnable.ok()) return Fail(runnable.status().message(), kExitInvalidInput);
  int code = RunOnThisMachine(options, plan->experiment, *runnable, drivers);
  // Whatever finished goes into the bundle, also after a failure or Ctrl-C.
  if (!WriteResults(options, *plan, *key)) return kExitError;
  return code;
}

}  // namespace orch::cli::run_local
