// Opens the HTML report the way a reader does, in a real browser: headless Chromium
// (/usr/bin/chromium, installed by `scripts/setup --with-test-tools`) builds the page's
// DOM, which must hold one plot per compared cell, and takes a screenshot, which must show
// the plots. Chromium runs with a throwaway profile, no network and a bounded time.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <utility>

#include "report/render.h"
#include "store/memory_store.h"
#include "tests/report/png_image.h"
#include "tests/report/report_fixture.h"
#include "tests/support/subprocess.h"

namespace orch::report {
namespace {

namespace fs = std::filesystem;
using testing::MakeRecord;
using testing::TwoPeakRow;

constexpr const char* kChromium = "/usr/bin/chromium";
// A cold start takes about a second here; the limit only stops a hung browser.
constexpr std::chrono::seconds kChromiumTimeout(30);
constexpr std::uint32_t kWindowWidth = 1280;
constexpr std::uint32_t kWindowHeight = 2000;
// The plot colours docs/report.md describes: blue KLD bars and red flip marks on a light
// grey frame.
constexpr std::uint32_t kBarColour = 0x3b6ea5;
constexpr std::uint32_t kFlipColour = 0xc0392b;
constexpr std::uint32_t kFrameBackground = 0xfafafa;

constexpr std::uint64_t kPositions = 300;

using CellName = std::pair<std::string, std::string>;  // workload, cell label

// The cells compared against the baseline, so those with a plot; "threads=8" failed and has
// none.
const std::set<CellName> kPlottedCells = {{"wiki", "attention=flash"},
                                          {"wiki", "quant=q8_0"},
                                          {"wiki", "kv=q4_0"},
                                          {"gen", "sampler.seed=43"}};

std::int32_t Top(std::uint64_t i) { return static_cast<std::int32_t>(i % testing::kVocab); }
std::int32_t Second(std::uint64_t i) {
  return static_cast<std::int32_t>((i + 1) % testing::kVocab);
}
double Margin(std::uint64_t i) { return 1.0 + 0.3 * static_cast<double>(i % 7); }

// A teacher-forced stream that follows the baseline with its margin scaled by `scale(i)`,
// and swaps top-1 and top-2 at `flips`.
std::vector<digest::PositionRecord> Stream(double (*scale)(std::uint64_t),
                                           const std::set<std::uint64_t>& flips) {
  std::vector<digest::PositionRecord> out;
  for (std::uint64_t i = 0; i < kPositions; ++i) {
    const double margin = Margin(i) * scale(i);
    const bool flip = flips.count(i) > 0;
    out.push_back(
        MakeRecord(i, TwoPeakRow(flip ? Second(i) : Top(i), flip ? Top(i) : Second(i), margin),
                   Top(i), /*full=*/true));
  }
  return out;
}

std::vector<digest::PositionRecord> Generated(const std::vector<std::int32_t>& tokens) {
  std::vector<digest::PositionRecord> out;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const std::int32_t other = (tokens[i] + 1) % static_cast<std::int32_t>(testing::kVocab);
    out.push_back(MakeRecord(i, TwoPeakRow(tokens[i], other, 2.0), digest::kNoTarget,
                             /*full=*/false, tokens[i]));
  }
  return out;
}

// wiki (teacher-forced, kPositions positions): baseline x2 identical; attention=flash a
// small wobble everywhere and 3 flips; quant=q8_0 10% flatter and 6 flips; kv=q4_0 drifting
// from position 150 on with 4 flips; threads=8 failed. gen (6 tokens): sampler.seed=43
// differs from token 3.
void BuildRenderExperiment(store::Store& store) {
  testing::ExperimentBuilder plan("render");
  plan.Workload("gen", "generate").Workload("wiki", "teacher_forced");
  for (const char* cell :
       {"baseline", "attention=flash", "quant=q8_0", "kv=q4_0", "threads=8", "sampler.seed=43"}) {
    plan.Cell(cell);
  }
  const std::string b0 = plan.Job("baseline", "wiki", 0), b1 = plan.Job("baseline", "wiki", 1);
  const std::string attention = plan.Job("attention=flash", "wiki", 0);
  const std::string quant = plan.Job("quant=q8_0", "wiki", 0);
  const std::string kv = plan.Job("kv=q4_0", "wiki", 0);
  const std::string threads = plan.Job("threads=8", "wiki", 0);
  const std::string g0 = plan.Job("baseline", "gen", 0);
  const std::string seed = plan.Job("sampler.seed=43", "gen", 0);
  plan.Submit(store);
  auto same = [](std::uint64_t) { return 1.0; };
  auto wobble = [](std::uint64_t i) { return 1.0 + 0.05 * std::sin(static_cast<double>(i)); };
  auto flatter = [](std::uint64_t) { return 0.9; };
  auto drift = [](std::uint64_t i) { return i < 150 ? 1.0 : 1.0 - 0.004 * (i - 150.0); };
  testing::AddSucceededRun(store, b0, "run-b0", Stream(same, {}));
  testing::AddSucceededRun(store, b1, "run-b1", Stream(same, {}));
  testing::AddSucceededRun(store, attention, "run-att", Stream(wobble, {40, 41, 200}));
  testing::AddSucceededRun(store, quant, "run-quant",
                           Stream(flatter, {12, 97, 150, 151, 152, 280}));
  testing::AddSucceededRun(store, kv, "run-kv", Stream(drift, {170, 230, 260, 290}));
  testing::AddFailedRun(store, threads, "run-threads", "driver exited with status 1");
  testing::AddSucceededRun(store, g0, "run-g0", Generated({1, 2, 3, 4, 5, 6}));
  testing::AddSucceededRun(store, seed, "run-seed", Generated({1, 2, 3, 7, 0, 1}));
}

std::string RenderExperimentHtml() {
  std::unique_ptr<store::Store> store = store::MakeMemoryStore();
  BuildRenderExperiment(*store);
  Result<ExperimentInput> input = LoadExperiment(*store, "render");
  EXPECT_TRUE(input.ok()) << input.status().ToString();
  std::unique_ptr<RunSource> source = MakeStoreRunSource(*store);
  Result<Report> report = BuildReport(*input, *source, {});
  EXPECT_TRUE(report.ok()) << report.status().ToString();
  return report.ok() ? RenderHtml(*report) : "";
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream content;
  content << in.rdbuf();
  return content.str();
}

// The value of attribute `name` in the start tag `tag`, or "" when absent.
std::string Attribute(const std::string& tag, const std::string& name) {
  const std::string key = " " + name + "=\"";
  const auto at = tag.find(key);
  if (at == std::string::npos) return "";
  const auto begin = at + key.size();
  return tag.substr(begin, tag.find('"', begin) - begin);
}

// Each <svg ...> element of `dom`: its start tag and its content.
std::vector<std::pair<std::string, std::string>> SvgElements(const std::string& dom) {
  std::vector<std::pair<std::string, std::string>> out;
  for (auto at = dom.find("<svg"); at != std::string::npos; at = dom.find("<svg", at + 1)) {
    const auto tag_end = dom.find('>', at);
    const auto end = dom.find("</svg>", tag_end);
    if (tag_end == std::string::npos || end == std::string::npos) break;
    out.emplace_back(dom.substr(at, tag_end + 1 - at), dom.substr(tag_end + 1, end - tag_end));
  }
  return out;
}

bool Near(std::uint32_t rgb, std::uint32_t other, int tolerance) {
  for (int shift : {0, 8, 16}) {
    const int a = static_cast<int>((rgb >> shift) & 0xff);
    const int b = static_cast<int>((other >> shift) & 0xff);
    if (std::abs(a - b) > tolerance) return false;
  }
  return true;
}

// Pixels near `rgb` (each channel within 8) in rows [first, last] of `image`.
std::size_t PixelsNear(const testing::PngImage& image, std::uint32_t rgb, std::uint32_t first,
                       std::uint32_t last) {
  std::size_t n = 0;
  for (std::uint32_t y = first; y <= last && y < image.height; ++y) {
    for (std::uint32_t x = 0; x < image.width; ++x) n += Near(image.Rgb(x, y), rgb, 8);
  }
  return n;
}

std::size_t DistinctColours(const testing::PngImage& image) {
  std::set<std::uint32_t> colours;
  for (std::uint32_t y = 0; y < image.height; y += 2) {
    for (std::uint32_t x = 0; x < image.width; x += 2) colours.insert(image.Rgb(x, y));
  }
  return colours.size();
}

// Whether row `y` holds a run of at least `length` pixels of `rgb`.
bool RowHasRun(const testing::PngImage& image, std::uint32_t y, std::uint32_t rgb,
               std::uint32_t length) {
  std::uint32_t run = 0;
  for (std::uint32_t x = 0; x < image.width && run < length; ++x) {
    run = Near(image.Rgb(x, y), rgb, 2) ? run + 1 : 0;
  }
  return run >= length;
}

// The bar areas of the plots on screen, as [first row, last row]: bands of at least 60
// consecutive rows, each with a run of at least 300 pixels of the frame's background
// (tables and text have none; the flip strip above the bars is too short to count).
std::vector<std::pair<std::uint32_t, std::uint32_t>> PlotAreas(const testing::PngImage& image) {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> areas;
  std::uint32_t start = 0;
  for (std::uint32_t y = 0; y <= image.height; ++y) {
    const bool inside = y < image.height && RowHasRun(image, y, kFrameBackground, 300);
    if (inside) continue;
    if (y - start >= 60) areas.emplace_back(start, y - 1);
    start = y + 1;
  }
  return areas;
}

// What Chromium would have to fetch to show the page: nothing.
TEST(HtmlSelfContainedTest, ReferencesNothingOutsideTheFile) {
  std::string html = RenderExperimentHtml();
  ASSERT_FALSE(html.empty());
  // A namespace name is an identifier, never fetched.
  const std::string xmlns = "\"http://www.w3.org/2000/svg\"";
  for (auto at = html.find(xmlns); at != std::string::npos; at = html.find(xmlns)) {
    html.erase(at, xmlns.size());
  }
  for (const char* reference : {"http://", "https://", "file:", "//", "url(", "src=", "href=",
                                "@import", "<link", "<script", "<iframe", "<object"}) {
    EXPECT_EQ(html.find(reference), std::string::npos) << "the HTML references " << reference;
  }
}

// Writes the report to report.html in a fresh directory, which is removed afterwards unless
// a check failed (its path is then printed, with Chromium's output inside).
class HtmlRenderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(kChromium))
        << "headless Chromium (" << kChromium
        << ") is not installed; this test needs it: run scripts/setup "
           "--with-test-tools";
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("orch-html-render-" + std::to_string(::getpid()) + "-" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    html_ = RenderExperimentHtml();
    std::ofstream(dir_ / "report.html", std::ios::binary) << html_;
  }

  void TearDown() override {
    if (dir_.empty()) return;
    if (HasFailure()) {
      std::cerr << "kept " << dir_.string() << " for inspection\n";
    } else {
      fs::remove_all(dir_);
    }
  }

  // Runs Chromium on report.html with `mode` (--dump-dom, --screenshot=...) and an isolated
  // profile; it may not resolve any host name.
  orch::testing::ProcessResult Chromium(const std::vector<std::string>& mode) {
    std::vector<std::string> argv = {kChromium,
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
                                     "--hide-scrollbars"};
    argv.insert(argv.end(), mode.begin(), mode.end());
    argv.push_back("file://" + (dir_ / "report.html").string());
    orch::testing::ProcessResult result = orch::testing::RunProcess(argv, kChromiumTimeout);
    std::ofstream(dir_ / "chromium.err", std::ios::app) << result.err;
    EXPECT_FALSE(result.timed_out) << "chromium ran past " << kChromiumTimeout.count() << " s";
    EXPECT_EQ(result.exit_code, 0) << result.err;
    return result;
  }

  fs::path dir_;
  std::string html_;
};

TEST_F(HtmlRenderTest, ChromiumBuildsOnePlotPerComparedCell) {
  const orch::testing::ProcessResult result = Chromium({"--dump-dom"});
  const std::string& dom = result.out;
  ASSERT_NE(dom.find("</html>"), std::string::npos) << "no DOM on stdout:\n" << result.err;
  std::multiset<CellName> plotted;
  for (const auto& [tag, content] : SvgElements(dom)) {
    EXPECT_EQ(Attribute(tag, "class"), "plot") << tag;
    const CellName name{Attribute(tag, "data-workload"), Attribute(tag, "data-cell")};
    plotted.insert(name);
    // The plot names its cell where a screen reader or a tooltip shows it.
    EXPECT_NE(content.find("<title>" + name.second + ":"), std::string::npos) << content;
  }
  EXPECT_EQ(plotted, std::multiset<CellName>(kPlottedCells.begin(), kPlottedCells.end()));
  // The failed cell has no plot, but its failure is on the page.
  EXPECT_NE(dom.find("driver exited with status 1"), std::string::npos);
}

TEST_F(HtmlRenderTest, ScreenshotShowsThePlots) {
  const fs::path png = dir_ / "screenshot.png";
  Chromium({"--screenshot=" + png.string(),
            "--window-size=" + std::to_string(kWindowWidth) + "," + std::to_string(kWindowHeight)});
  ASSERT_TRUE(fs::exists(png)) << "no screenshot written";
  Result<testing::PngImage> image = testing::DecodePng(ReadFile(png));
  ASSERT_TRUE(image.ok()) << image.status().ToString();
  EXPECT_EQ(image->width, kWindowWidth);
  EXPECT_EQ(image->height, kWindowHeight);
  // Text, table rules, plot frames and bars: far from a blank page.
  EXPECT_GT(DistinctColours(*image), 20u);
  // The experiment is short enough for every plot to be on screen: one per compared cell,
  // each with its KLD bars and, in the strip above them, its flip marks.
  const auto areas = PlotAreas(*image);
  EXPECT_EQ(areas.size(), kPlottedCells.size()) << "plots seen in the screenshot";
  for (const auto& [first, last] : areas) {
    EXPECT_GT(PixelsNear(*image, kBarColour, first, last), 50u) << "rows " << first << "-" << last;
    EXPECT_GT(PixelsNear(*image, kFlipColour, first - 16, first), 10u)
        << "rows " << first << "-" << last;
  }
}

}  // namespace
}  // namespace orch::report
