#include "cli/report_command.h"

#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include "base/suggest.h"
#include "cli/command.h"
#include "cli/files.h"
#include "cli/scratch_dir.h"
#include "cli/status_text.h"
#include "cli/stored_status.h"
#include "report/position_export.h"
#include "report/render.h"
#include "report/report.h"
#include "report/summary_token_decoder.h"

namespace orch::cli {
namespace {

struct ReportCommandOptions {
  std::string experiment;
  std::string data_dir = "./orch-data";
  bool json = false;
  bool csv = false;
  std::string html;
  std::string positions;
  bool by_host = false;
};

// The text report's width: COLUMNS when it holds a positive number, else the terminal's
// width when stdout is one, else report::kDefaultTextWidth (docs/report.md).
report::TextOptions TextWidth() {
  report::TextOptions options;
  if (const char* columns = std::getenv("COLUMNS"); columns != nullptr) {
    char* end = nullptr;
    const long value = std::strtol(columns, &end, 10);
    if (end != columns && *end == '\0' && value > 0) {
      options.width = static_cast<std::size_t>(value);
      return options;
    }
  }
  winsize size{};
  if (::isatty(STDOUT_FILENO) && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 &&
      size.ws_col > 0) {
    options.width = size.ws_col;
  }
  return options;
}

int Fail(const Status& status) {
  std::cerr << "orch report: " << status.message() << "\n";
  return status.code() == StatusCode::kNotFound ? kExitInvalidInput : kExitError;
}

// An experiment the store does not hold: the ones it does, and the closest name.
int UnknownExperiment(const Status& status, store::Store& store, const std::string& experiment) {
  Result<protocol::StatusReply> stored = StoredProgress(store);
  if (!stored.ok()) return Fail(status);
  std::vector<std::string> names;
  for (const protocol::ExperimentProgress& e : stored->experiments) names.push_back(e.experiment);
  std::string closest = ClosestName(experiment, names);
  std::string guess = closest.empty() ? "" : " (did you mean " + closest + "?)";
  std::cerr << "orch report: " << status.message() << guess << "; the store holds:\n"
            << FormatExperimentsTable(*stored);
  return kExitInvalidInput;
}

// --by-host: the same coordinate across every host that ran it (docs/report.md).
int RunHostReport(const ReportCommandOptions& options, const report::ExperimentInput& input,
                  report::RunSource& source) {
  Result<report::HostReport> built = report::BuildHostReport(input, source);
  if (!built.ok()) return Fail(built.status());
  std::cout << (options.json ? report::RenderHostJson(*built)
                             : report::RenderHostText(*built, TextWidth()));
  return kExitOk;
}

// --positions: streamed into a temporary file next to FILE and renamed over it once
// complete, so FILE is never a partial export.
Status WritePositionExport(const std::string& path, report::PositionFormat format,
                           const report::Report& built, report::RunSource& source,
                           const report::TokenDecoder* decoder) {
  const std::string temporary = path + ".partial";
  std::error_code ignored;
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) {
      return InvalidArgument("--positions " + path + ": cannot write " + temporary + ": " +
                             std::strerror(errno));
    }
    Status written = report::WritePositions(built, source, decoder, format, out);
    if (!written.ok()) {
      out.close();
      std::filesystem::remove(temporary, ignored);
      return written.WithContext("--positions " + path);
    }
  }
  std::error_code renamed;
  std::filesystem::rename(temporary, path, renamed);
  if (!renamed) return Status();
  std::filesystem::remove(temporary, ignored);
  return Internal("--positions " + path + ": cannot rename " + temporary + ": " +
                  renamed.message());
}

int RunReport(const ReportCommandOptions& options) {
  std::optional<report::PositionFormat> positions;
  if (!options.positions.empty()) {
    Result<report::PositionFormat> format = report::PositionFormatOf(options.positions);
    if (!format.ok()) {
      std::cerr << "orch report: --positions " << format.status().message() << "\n";
      return kExitInvalidInput;
    }
    positions = *format;
  }
  ScratchDir scratch("orch-report");
  Result<std::unique_ptr<store::Store>> store = OpenStoreToRead(options.data_dir, scratch);
  if (!store.ok()) return Fail(store.status());
  Result<report::ExperimentInput> input = report::LoadExperiment(**store, options.experiment);
  if (input.status().code() == StatusCode::kNotFound)
    return UnknownExperiment(input.status(), **store, options.experiment);
  if (!input.ok()) return Fail(input.status());
  std::unique_ptr<report::RunSource> source = report::MakeStoreRunSource(**store);
  if (options.by_host) return RunHostReport(options, *input, *source);
  // Token text comes from what the drivers reported with the runs (none: ids only).
  std::unique_ptr<report::TokenDecoder> decoder = report::MakeSummaryTokenDecoder(input->runs);
  Result<report::Report> built =
      report::BuildReport(*input, *source, report::ReportOptions{decoder.get()});
  if (!built.ok()) return Fail(built.status());
  if (!options.html.empty()) {
    Status written = WriteFileAtomically(options.html, report::RenderHtml(*built));
    if (!written.ok()) return Fail(written);
  }
  if (positions) {
    Status written =
        WritePositionExport(options.positions, *positions, *built, *source, decoder.get());
    if (!written.ok()) return Fail(written);
  }
  if (options.json) {
    std::cout << report::RenderJson(*built);
  } else if (options.csv) {
    std::cout << report::RenderCsv(*built);
  } else {
    std::cout << report::RenderText(*built, TextWidth());
  }
  if (!options.html.empty())
    std::cerr << "orch report: HTML report written to " << options.html << "\n";
  if (positions)
    std::cerr << "orch report: per-position export written to " << options.positions << "\n";
  if (built->partial) {
    std::cerr << "orch report: partial report: " << built->jobs_in_progress
              << " jobs have not finished\n";
  }
  return kExitOk;
}

}  // namespace

void RegisterReportCommand(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<ReportCommandOptions>();  // shared with the callback below
  CLI::App* cmd = app.add_subcommand(
      "report",
      "Report where and why the configurations of an experiment diverge: repeatability,\n"
      "each cell against the baseline, flips and near-ties, attribution, fingerprints.\n"
      "Reads the store directly, also while the coordinator runs (docs/report.md). Exit status: 0 "
      "ok (also for a partial\n"
      "report of a running experiment), 2 unknown experiment or store, 1 other error.");
  cmd->add_option("EXPERIMENT", options->experiment, "experiment name (as submitted)")->required();
  cmd->add_option("--data-dir", options->data_dir,
                  "the coordinator's data directory (its store is DIR/rocksdb)")
      ->capture_default_str();
  CLI::Option* json =
      cmd->add_flag("--json", options->json, "print JSON (schema orch.report/1, docs/report.md)");
  CLI::Option* csv =
      cmd->add_flag("--csv", options->csv, "print CSV, one row per workload and cell");
  json->excludes(csv);
  CLI::Option* html = cmd->add_option("--html", options->html,
                                      "also write a self-contained HTML report with plots to FILE");
  CLI::Option* positions =
      cmd->add_option("--positions", options->positions,
                      "also write every compared position (per cell, workload, repeat) to FILE,\n"
                      "CSV or JSON by its extension (.csv, .json; docs/report.md)");
  CLI::Option* by_host = cmd->add_flag(
      "--by-host", options->by_host,
      "instead, for every job run on more than one host or fingerprint class (the lab's\n"
      "and contributors' runs), compare each such run with the job's reference run,\n"
      "grouped by the pair of classes they differ by (JSON: orch.report-hosts/2)");
  by_host->excludes(csv);
  by_host->excludes(html);
  by_host->excludes(positions);
  cmd->callback([options, &exit_code] { exit_code = RunReport(*options); });
}

}  // namespace orch::cli
