// The task strips of the HTML report (docs/report.md, "Task outcomes") as a reader sees
// them, in headless Chromium (/usr/bin/chromium, scripts/setup --with-test-tools): the
// browser's DOM holds one strip per task and cell with a box per case, and its screenshot
// shows every box in its colour (green pass, red fail), with the changed cases outlined in
// orange and the baseline-unstable ones in purple. Chromium runs with a throwaway profile,
// no network and a bounded time.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "report/render.h"
#include "store/memory_store.h"
#include "tests/report/png_image.h"
#include "tests/report/task_fixture.h"
#include "tests/support/subprocess.h"

namespace orch::report {
namespace {

namespace fs = std::filesystem;

constexpr const char* kStripChromium = "/usr/bin/chromium";
constexpr std::chrono::seconds kStripChromiumTimeout(30);
// The colours docs/report.md gives the boxes.
constexpr std::uint32_t kPassColour = 0x2e7d32, kFailColour = 0xc62828;
constexpr std::uint32_t kChangedColour = 0xff9800, kUnstableColour = 0x7e57c2;
// A box: 12 x 12 pixels inside a 2-pixel border that shows its fill unless outlined.
constexpr std::size_t kBoxInside = 12 * 12, kBoxRing = 16 * 16 - 12 * 12;

Report StripReport() {
  auto store = store::MakeMemoryStore();
  testing::BuildTaskExperiment(*store);
  testing::TaskFixtureCatalog catalog;
  Result<ExperimentInput> input = LoadExperiment(*store, "tasks");
  EXPECT_TRUE(input.ok()) << input.status().ToString();
  std::unique_ptr<RunSource> source = MakeStoreRunSource(*store);
  ReportOptions options;
  options.tasks = &catalog;
  Result<Report> report = BuildReport(*input, *source, options);
  EXPECT_TRUE(report.ok()) << report.status().ToString();
  return report.ok() ? std::move(*report) : Report();
}

std::size_t StripCount(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

bool StripNear(std::uint32_t rgb, std::uint32_t other) {
  for (int shift : {0, 8, 16}) {
    if (std::abs(static_cast<int>((rgb >> shift) & 0xff) -
                 static_cast<int>((other >> shift) & 0xff)) > 8) {
      return false;
    }
  }
  return true;
}

std::size_t StripPixels(const testing::PngImage& image, std::uint32_t rgb) {
  std::size_t n = 0;
  for (std::uint32_t y = 0; y < image.height; ++y) {
    for (std::uint32_t x = 0; x < image.width; ++x) n += StripNear(image.Rgb(x, y), rgb);
  }
  return n;
}

// The pixels each colour should cover, from the report's outcomes.
struct StripExpected {
  std::size_t pass = 0, fail = 0, changed = 0, unstable = 0, boxes = 0;
};

StripExpected ExpectedPixels(const Report& r) {
  StripExpected e;
  for (const TaskWorkloadReport& t : r.tasks) {
    std::vector<const TaskCellReport*> cells{&t.baseline};
    for (const TaskCellReport& c : t.cells) cells.push_back(&c);
    for (const TaskCellReport* c : cells) {
      for (const TaskCaseOutcome& o : c->outcomes) {
        ++e.boxes;
        std::size_t& fill = o.pass() ? e.pass : e.fail;
        if (!o.changed) {
          fill += kBoxInside + kBoxRing;
        } else {
          fill += kBoxInside;
          (o.baseline_unstable ? e.unstable : e.changed) += kBoxRing;
        }
      }
    }
  }
  return e;
}

class TaskHtmlRenderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(kStripChromium))
        << "headless Chromium (" << kStripChromium
        << ") is not installed; this test needs it: run scripts/setup --with-test-tools";
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("orch-task-html-" + std::to_string(::getpid()) + "-" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    report_ = StripReport();
    std::ofstream(dir_ / "report.html", std::ios::binary) << RenderHtml(report_);
  }

  void TearDown() override {
    if (dir_.empty()) return;
    if (HasFailure()) {
      std::cerr << "kept " << dir_.string() << " for inspection\n";
    } else {
      fs::remove_all(dir_);
    }
  }

  orch::testing::ProcessResult Chromium(const std::vector<std::string>& mode) {
    std::vector<std::string> argv = {kStripChromium,
                                     "--headless",
                                     "--no-sandbox",
                                     "--disable-gpu",
                                     "--user-data-dir=" + (dir_ / "profile").string(),
                                     "--no-first-run",
                                     "--no-default-browser-check",
                                     "--disable-background-networking",
                                     "--disable-component-update",
                                     "--disable-sync",
                                     "--disable-extensions",
                                     "--host-resolver-rules=MAP * ~NOTFOUND",
                                     "--hide-scrollbars",
                                     "--force-device-scale-factor=1"};
    argv.insert(argv.end(), mode.begin(), mode.end());
    argv.push_back("file://" + (dir_ / "report.html").string());
    orch::testing::ProcessResult result = orch::testing::RunProcess(argv, kStripChromiumTimeout);
    EXPECT_FALSE(result.timed_out) << "chromium ran past " << kStripChromiumTimeout.count() << " s";
    EXPECT_EQ(result.exit_code, 0) << result.err;
    return result;
  }

  fs::path dir_;
  Report report_;
};

TEST_F(TaskHtmlRenderTest, TheDomHoldsAStripPerTaskAndCellWithABoxPerCase) {
  const std::string dom = Chromium({"--dump-dom"}).out;
  EXPECT_EQ(StripCount(dom, "<div class=\"task-strip\""), 6u);  // 2 tasks x 3 cells
  EXPECT_EQ(StripCount(dom, "<span class=\"case "), ExpectedPixels(report_).boxes);
  EXPECT_EQ(StripCount(dom, "<span class=\"case fail changed\" data-case=\"c2\""), 1u);
  EXPECT_EQ(StripCount(dom, "<span class=\"case fail unstable\" data-case=\"c4\""), 1u);
}

TEST_F(TaskHtmlRenderTest, TheScreenshotShowsEveryBoxInItsColour) {
  const fs::path png = dir_ / "screenshot.png";
  Chromium({"--screenshot=" + png.string(), "--window-size=1280,4000"});
  ASSERT_TRUE(fs::exists(png)) << "no screenshot written";
  std::ifstream in(png, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  Result<testing::PngImage> image = testing::DecodePng(bytes.str());
  ASSERT_TRUE(image.ok()) << image.status().ToString();
  const StripExpected e = ExpectedPixels(report_);
  EXPECT_EQ(StripPixels(*image, kPassColour), e.pass);
  EXPECT_EQ(StripPixels(*image, kFailColour), e.fail);
  EXPECT_EQ(StripPixels(*image, kChangedColour), e.changed);
  EXPECT_EQ(StripPixels(*image, kUnstableColour), e.unstable);
  EXPECT_GT(e.changed, 0u);
  EXPECT_GT(e.unstable, 0u);
}

}  // namespace
}  // namespace orch::report
