// Opens the HTML report the way a reader does, in a real browser: headless Chromium
// (/usr/bin/chromium, installed by `scripts/setup --with-test-tools`) builds the page's
// DOM, which must hold one plot per compared cell, and takes a screenshot, which must show
// the plots. Chromium runs with a throwaway profile, no network and a bounded time.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
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
#include "report/summary_token_decoder.h"
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
constexpr std::uint32_t kWindowHeight = 4000;
// The plot colours docs/report.md describes: blue KLD bars and red flip marks on a light
// grey frame.
constexpr std::uint32_t kBarColour = 0x3b6ea5;
constexpr std::uint32_t kFlipColour = 0xc0392b;
constexpr std::uint32_t kExactColour = 0xe67e22;
constexpr std::uint32_t kFrameBackground = 0xfafafa;
constexpr std::uint32_t kPageBackground = 0xffffff;

constexpr std::uint64_t kPositions = 300;

using CellName = std::pair<std::string, std::string>;  // workload, cell label

constexpr std::uint64_t kFullEvery = 50;  // full rows (exact KLD) at 0, 50, 100, ...
constexpr const char* kBitIdenticalCell = "cpu_backend=haswell";

// The cells compared against the baseline, so those with a plot, in page order;
// "threads=8" failed and has none.
const std::vector<CellName> kPlottedCells = {{"gen", "sampler.seed=43"},
                                             {"wiki", "attention=flash"},
                                             {"wiki", "quant=q8_0"},
                                             {"wiki", "kv=q4_0"},
                                             {"wiki", kBitIdenticalCell}};

std::int32_t Top(std::uint64_t i) { return static_cast<std::int32_t>(i % testing::kVocab); }
std::int32_t Second(std::uint64_t i) {
  return static_cast<std::int32_t>((i + 1) % testing::kVocab);
}
// A near-tie at 97 (where quant=q8_0 flips), else clear margins.
double Margin(std::uint64_t i) { return i == 97 ? 0.05 : 1.0 + 0.3 * static_cast<double>(i % 7); }

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
                   Top(i), /*full=*/i % kFullEvery == 0));
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

// A run summary as the agent stores it: the driver's hello (with a system_info string long
// enough to run off the page unless wrapped), its done frame with token texts and, for
// generations, the stop reason.
std::string Summary(const std::string& version, const std::string& stop) {
  std::string system_info = version + "|";
  for (int i = 0; i < 40; ++i) system_info += "CPU_FEATURE_" + std::to_string(i) + "=1|";
  std::string done = R"({"token_text": {"0": "The", "1": " cat", "2": " sat", "3": " on",
    "4": " the", "5": " mat", "6": ".", "7": "\n"}, "model": {"sha256": "5eed", "type": "Q4_0"}})";
  if (!stop.empty()) {
    done.pop_back();
    done += R"(, "stop": ")" + stop + R"(", "generated_tokens": 6})";
  }
  return R"({"hello": {"engine": "llama.cpp", "version": ")" + version +
         R"(", "commit": "c0ffee", "build": {"system_info": ")" + system_info + R"("}}, "done": )" +
         done + "}";
}

// wiki (teacher-forced, kPositions positions, full rows every kFullEvery): baseline x2
// identical; attention=flash a small wobble everywhere and 1 flip, at the near-tie at 97
// (its largest KLD is far below the other cells'); quant=q8_0 10% flatter
// and 6 flips; kv=q4_0 drifting from position 150 on with 4 flips (another engine build);
// cpu_backend=haswell bit-identical to the baseline; threads=8 failed. gen (max_tokens 64;
// every run stopped at EOS after 6 tokens): sampler.seed=43 differs from token 3.
void BuildRenderExperiment(store::Store& store) {
  testing::ExperimentBuilder plan("render");
  plan.Workload("gen", "generate", 64).Workload("wiki", "teacher_forced", kPositions, kFullEvery);
  plan.Model("tiny-llama", "0123abcd").Baseline("engine", "llama.cpp@v0.4.0");
  plan.Baseline("quant", "q4_0");
  for (const char* cell : {"baseline", "attention=flash", "quant=q8_0", "kv=q4_0",
                           kBitIdenticalCell, "threads=8", "sampler.seed=43"}) {
    plan.Cell(cell);
  }
  const std::string b0 = plan.Job("baseline", "wiki", 0), b1 = plan.Job("baseline", "wiki", 1);
  const std::string attention = plan.Job("attention=flash", "wiki", 0);
  const std::string quant = plan.Job("quant=q8_0", "wiki", 0);
  const std::string kv = plan.Job("kv=q4_0", "wiki", 0);
  const std::string same = plan.Job(kBitIdenticalCell, "wiki", 0);
  const std::string threads = plan.Job("threads=8", "wiki", 0);
  const std::string g0 = plan.Job("baseline", "gen", 0);
  const std::string seed = plan.Job("sampler.seed=43", "gen", 0);
  plan.Submit(store);
  auto unchanged = [](std::uint64_t) { return 1.0; };
  auto wobble = [](std::uint64_t i) { return 1.0 + 0.05 * std::sin(static_cast<double>(i)); };
  auto flatter = [](std::uint64_t) { return 0.9; };
  auto drift = [](std::uint64_t i) { return i < 150 ? 1.0 : 1.0 - 0.004 * (i - 150.0); };
  const std::string v4 = Summary("v0.4.0", ""), b8390 = Summary("b8390", "");
  using testing::AddSucceededRunWithSummary;
  AddSucceededRunWithSummary(store, b0, "run-b0", Stream(unchanged, {}), v4);
  AddSucceededRunWithSummary(store, b1, "run-b1", Stream(unchanged, {}), v4);
  AddSucceededRunWithSummary(store, attention, "run-att", Stream(wobble, {97}), v4);
  AddSucceededRunWithSummary(store, quant, "run-quant",
                             Stream(flatter, {12, 97, 150, 151, 152, 280}), v4);
  AddSucceededRunWithSummary(store, kv, "run-kv", Stream(drift, {170, 230, 260, 290}), b8390);
  AddSucceededRunWithSummary(store, same, "run-same", Stream(unchanged, {}), v4);
  testing::AddFailedRun(store, threads, "run-threads", "driver exited with status 1");
  AddSucceededRunWithSummary(store, g0, "run-g0", Generated({1, 2, 3, 4, 5, 7}),
                             Summary("v0.4.0", "eos"));
  AddSucceededRunWithSummary(store, seed, "run-seed", Generated({1, 2, 3, 7, 0, 7}),
                             Summary("v0.4.0", "eos"));
}

Report RenderExperimentReport() {
  std::unique_ptr<store::Store> store = store::MakeMemoryStore();
  BuildRenderExperiment(*store);
  Result<ExperimentInput> input = LoadExperiment(*store, "render");
  EXPECT_TRUE(input.ok()) << input.status().ToString();
  std::unique_ptr<RunSource> source = MakeStoreRunSource(*store);
  std::unique_ptr<TokenDecoder> decoder = MakeSummaryTokenDecoder(input->runs);
  Result<Report> report = BuildReport(*input, *source, ReportOptions{decoder.get()});
  EXPECT_TRUE(report.ok()) << report.status().ToString();
  return report.ok() ? std::move(*report) : Report();
}

std::string RenderExperimentHtml() { return RenderHtml(RenderExperimentReport()); }

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

// Each <svg ...> element of `dom` but the attribution's interval whiskers (or only those,
// with `whiskers`): its start tag and its content.
std::vector<std::pair<std::string, std::string>> SvgElements(const std::string& dom,
                                                             bool whiskers = false) {
  std::vector<std::pair<std::string, std::string>> out;
  for (auto at = dom.find("<svg"); at != std::string::npos; at = dom.find("<svg", at + 1)) {
    const auto tag_end = dom.find('>', at);
    const auto end = dom.find("</svg>", tag_end);
    if (tag_end == std::string::npos || end == std::string::npos) break;
    const std::string tag = dom.substr(at, tag_end + 1 - at);
    if ((tag.find(" class=\"interval\"") != std::string::npos) != whiskers) continue;
    out.emplace_back(tag, dom.substr(tag_end + 1, end - tag_end));
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

// Whether `rgb` lies within `tolerance` of the segment between colours `a` and `b` (an
// anti-aliased edge between them).
bool OnBlend(std::uint32_t rgb, std::uint32_t a, std::uint32_t b, double tolerance) {
  double d[3], v[3], t_num = 0.0, t_den = 0.0;
  for (int i = 0; i < 3; ++i) {
    const int shift = 8 * i;
    const double ca = (a >> shift) & 0xff, cb = (b >> shift) & 0xff, c = (rgb >> shift) & 0xff;
    d[i] = cb - ca;
    v[i] = c - ca;
    t_num += v[i] * d[i];
    t_den += d[i] * d[i];
  }
  const double t = std::clamp(t_num / t_den, 0.0, 1.0);
  double distance2 = 0.0;
  for (int i = 0; i < 3; ++i) distance2 += (v[i] - t * d[i]) * (v[i] - t * d[i]);
  return distance2 <= tolerance * tolerance;
}

// A pixel of the KLD frame: its background, its bars, its exact dots, or an edge between.
bool FramePixel(std::uint32_t rgb) {
  return OnBlend(rgb, kFrameBackground, kBarColour, 4) ||
         OnBlend(rgb, kFrameBackground, kExactColour, 4) ||
         OnBlend(rgb, kBarColour, kExactColour, 4);
}

// Whether row `y` holds at least `count` pixels of a KLD frame (a frame is 870 wide; only
// the edges where an exact dot meets a bar fall outside the blends FramePixel accepts).
bool RowInFrame(const testing::PngImage& image, std::uint32_t y, std::uint32_t count) {
  std::uint32_t n = 0;
  for (std::uint32_t x = 0; x < image.width && n < count; ++x) n += FramePixel(image.Rgb(x, y));
  return n >= count;
}

// The KLD frames of the plots on screen, as [first row, last row]: bands of at least 60
// consecutive rows, each with at least 600 pixels of the frame's background, bars or dots
// (tables, text and the margin track have none; the flip strip is not in the frame).
std::vector<std::pair<std::uint32_t, std::uint32_t>> PlotAreas(const testing::PngImage& image) {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> areas;
  std::uint32_t start = 0;
  for (std::uint32_t y = 0; y <= image.height; ++y) {
    const bool inside = y < image.height && RowInFrame(image, y, 600);
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

// Every attribution rank draws its 95% interval: a whisker from lo to hi around the mean,
// left to right in that order, on the table's one scale.
TEST_F(HtmlRenderTest, ChromiumDrawsAnIntervalWhiskerForEveryRank) {
  const Report report = RenderExperimentReport();
  const std::string dom = Chromium({"--dump-dom"}).out;
  std::size_t whiskers = 0;
  for (const auto& [tag, content] : SvgElements(dom, true)) {
    ++whiskers;
    const double mean = std::stod(Attribute(tag, "data-mean"));
    ASSERT_FALSE(Attribute(tag, "data-lo").empty()) << tag;  // every rank here has n >= 2
    EXPECT_LE(std::stod(Attribute(tag, "data-lo")), mean) << tag;
    EXPECT_GE(std::stod(Attribute(tag, "data-hi")), mean) << tag;
    const std::string line = content.substr(content.find("<line"));
    EXPECT_LE(std::stod(Attribute(line, "x1")), std::stod(Attribute(line, "x2"))) << content;
    EXPECT_NE(content.find("<circle"), std::string::npos) << content;
    EXPECT_NE(content.find("<title>"), std::string::npos) << content;
  }
  EXPECT_EQ(whiskers,
            report.by_kld.size() + report.by_top1.size() + report.by_kld_returned_top_k.size());
  EXPECT_GT(whiskers, 0u);
}

// The plots of a workload share one value scale, named on the element and in the legend,
// with labelled ticks; a log scale because the values span more than two decades.
TEST_F(HtmlRenderTest, PlotsOfAWorkloadShareOneLabelledScale) {
  const std::string dom = Chromium({"--dump-dom"}).out;
  const Report report = RenderExperimentReport();
  double low = INFINITY, high = 0.0;
  for (const CellReport& c : report.workloads[1].cells) {
    for (const auto* series : {&c.result.plot.max_exact_kld, &c.result.plot.max_bound_kld}) {
      for (double v : *series) {
        if (v > 0.0) low = std::min(low, v);
        if (std::isfinite(v)) high = std::max(high, v);
      }
    }
  }
  ASSERT_GT(high / low, 100.0) << "the experiment should span more than two decades";
  std::set<std::string> scales, tops;
  for (const auto& [tag, content] : SvgElements(dom)) {
    if (Attribute(tag, "data-workload") != "wiki") continue;
    scales.insert(Attribute(tag, "data-scale"));
    tops.insert(Attribute(tag, "data-kld-high"));
    EXPECT_GE(std::stod(Attribute(tag, "data-kld-high")), high) << tag;
    EXPECT_LE(std::stod(Attribute(tag, "data-kld-low")), low) << tag;
    EXPECT_NE(content.find("KLD axis: log scale"), std::string::npos) << tag;
    std::size_t ticks = 0;
    for (auto at = content.find("class=\"tick\""); at != std::string::npos;
         at = content.find("class=\"tick\"", at + 1)) {
      EXPECT_NE(content[content.find('>', at) + 1], '<') << "a tick without a label";
      ++ticks;
    }
    EXPECT_GE(ticks, 6u) << "value and position ticks in " << tag;
  }
  EXPECT_EQ(scales, std::set<std::string>{"log"});
  EXPECT_EQ(tops.size(), 1u) << "one scale for every plot of the workload";
}

// Exact positions are dots, apart from the top-k bound bars; every plot has the margin
// track; a cell equal to the baseline says so instead of showing an empty frame.
TEST_F(HtmlRenderTest, PlotsMarkExactPositionsTheMarginTrackAndBitIdenticalCells) {
  const std::string dom = Chromium({"--dump-dom"}).out;
  std::size_t wiki_plots = 0;
  for (const auto& [tag, content] : SvgElements(dom)) {
    const std::string cell = Attribute(tag, "data-cell");
    EXPECT_NE(content.find("class=\"margin-track\""), std::string::npos) << cell;
    EXPECT_NE(content.find("class=\"noise-band\""), std::string::npos) << cell;
    EXPECT_EQ(content.find("bit identical") != std::string::npos, cell == kBitIdenticalCell)
        << cell;
    if (Attribute(tag, "data-workload") != "wiki") continue;
    ++wiki_plots;
    std::size_t exact = 0;
    for (auto at = content.find("class=\"exact\""); at != std::string::npos;
         at = content.find("class=\"exact\"", at + 1)) {
      ++exact;
    }
    EXPECT_EQ(exact, kPositions / kFullEvery) << cell;
    EXPECT_EQ(content.find("class=\"bound\"") != std::string::npos, cell != kBitIdenticalCell)
        << cell;
  }
  EXPECT_EQ(wiki_plots, 4u);
  // The baseline's margin at 97 is below every cell's noise band.
  EXPECT_NE(dom.find("class=\"near-tie\""), std::string::npos);
}

// The header names the model, the baseline coordinate, the hosts and the engine builds;
// the warnings say that the generations stopped early; flips show their text in context.
TEST_F(HtmlRenderTest, PageNamesWhatProducedTheRunsAndWarnsAboutShortGenerations) {
  const std::string dom = Chromium({"--dump-dom"}).out;
  for (const char* text :
       {"tiny-llama (sha256:0123abcd)", "Q4_0 sha256:5eed", "engine=llama.cpp@v0.4.0, quant=q4_0",
        "llama.cpp v0.4.0 (commit c0ffee)", "llama.cpp b8390 (commit c0ffee) [kv=q4_0]", "agent-1",
        "baseline run stopped (eos) after 6 of 64 requested tokens", "\" mat.\\nThe\""}) {
    EXPECT_NE(dom.find(text), std::string::npos) << text;
  }
  EXPECT_NE(dom.find("<li class=\"warning\" data-kind=\"generation_short\">"), std::string::npos);
}

// The tallest bar of each plot with bars, from the bottom of its frame.
std::uint32_t TallestBar(const testing::PngImage& image, std::uint32_t first, std::uint32_t last) {
  std::uint32_t tallest = 0;
  for (std::uint32_t x = 0; x < image.width; ++x) {
    std::uint32_t top = last + 1;
    for (std::uint32_t y = first; y <= last + 40 && y < image.height; ++y) {
      if (Near(image.Rgb(x, y), kBarColour, 8)) {
        top = y;
        break;
      }
    }
    if (top <= last) tallest = std::max(tallest, last + 1 - top);
  }
  return tallest;
}

// The generation view as Chromium builds it (docs/report.md, "Generate workloads"): the
// plots of the generate workload span one x range though the cells' figures stop at
// different positions, each marks its first divergence, and the texts sit side by side.
TEST_F(HtmlRenderTest, GenerationPlotsShareOneXRangeAndTheTextsSitSideBySide) {
  std::unique_ptr<store::Store> store = store::MakeMemoryStore();
  testing::BuildGenerationExperiment(*store);
  Result<ExperimentInput> input = LoadExperiment(*store, "generation");
  ASSERT_TRUE(input.ok()) << input.status().ToString();
  std::unique_ptr<RunSource> source = MakeStoreRunSource(*store);
  Result<Report> report = BuildReport(*input, *source, {});
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  std::ofstream(dir_ / "report.html", std::ios::binary) << RenderHtml(*report);
  const std::string dom = Chromium({"--dump-dom"}).out;
  std::set<std::string> ranges;
  int plots = 0;
  for (const auto& [tag, content] : SvgElements(dom)) {
    ++plots;
    ranges.insert(Attribute(tag, "data-positions"));
    EXPECT_EQ(Attribute(tag, "data-margin-scale"), "log") << tag;
    EXPECT_NE(content.find("class=\"divergence\""), std::string::npos) << content;
  }
  EXPECT_EQ(plots, 2);
  EXPECT_EQ(ranges, std::set<std::string>{"6"});
  EXPECT_NE(dom.find("<table class=\"generated\">"), std::string::npos) << dom;
  std::size_t texts = 0;
  for (auto at = dom.find("class=\"generated-text\""); at != std::string::npos;
       at = dom.find("class=\"generated-text\"", at + 1)) {
    ++texts;
  }
  EXPECT_EQ(texts, 4u);  // baseline and cell, for each of the two cells
  EXPECT_NE(dom.find("The cat sat on the mat.\nIt purred."), std::string::npos);
}

// Every label of every plot lies inside its plot, as Chromium lays out the text: a label
// wider than the plot was cut off at its right edge (the margin track's caption, with the
// noise band's value at its end, ran past it). A script added to a copy of the page
// measures each <text> and writes what overflows into the DOM that --dump-dom prints.
TEST_F(HtmlRenderTest, EveryPlotLabelFitsInsideItsPlot) {
  const std::string script = R"(<script>
let overflow = [];
for (const svg of document.querySelectorAll('svg.plot')) {
  const width = svg.viewBox.baseVal.width;
  for (const text of svg.querySelectorAll('text')) {
    const box = text.getBBox();
    if (box.x < 0 || box.x + box.width > width + 0.5)
      overflow.push(svg.dataset.cell + ': ' + text.textContent + ' [' + box.x.toFixed(0) + ', ' +
                    (box.x + box.width).toFixed(0) + ' of ' + width + ']');
  }
}
document.body.setAttribute('data-measured', document.querySelectorAll('svg.plot text').length);
document.body.setAttribute('data-overflow', overflow.join(' | '));
</script>)";
  std::string measured = html_;
  const std::size_t body_end = measured.rfind("</body>");
  ASSERT_NE(body_end, std::string::npos);
  measured.insert(body_end, script);
  std::ofstream(dir_ / "report.html", std::ios::binary | std::ios::trunc) << measured;
  const orch::testing::ProcessResult result = Chromium({"--dump-dom"});
  const std::string& dom = result.out;
  const std::size_t body = dom.find("<body");
  ASSERT_NE(body, std::string::npos) << result.err;
  const std::string tag = dom.substr(body, dom.find('>', body) - body + 1);
  EXPECT_GT(std::atoi(Attribute(tag, "data-measured").c_str()), 10) << tag;
  EXPECT_EQ(Attribute(tag, "data-overflow"), "") << tag;
}

TEST_F(HtmlRenderTest, ScreenshotShowsThePlotsWithinTheWindow) {
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
  // Nothing runs off the page: the right margin is blank on every row (long fingerprint
  // values wrap inside their cells).
  for (std::uint32_t y = 0; y < image->height; ++y) {
    for (std::uint32_t x = image->width - 12; x < image->width; ++x) {
      ASSERT_TRUE(Near(image->Rgb(x, y), kPageBackground, 4))
          << "something drawn at the right edge, row " << y << " column " << x;
    }
  }
  // Every plot is on screen, in page order, each with its bars and flip marks, except the
  // bit-identical cell, which has neither.
  const auto areas = PlotAreas(*image);
  std::string seen;
  for (const auto& [first, last] : areas) {
    seen += " " + std::to_string(first) + "-" + std::to_string(last);
  }
  ASSERT_EQ(areas.size(), kPlottedCells.size()) << "plots seen in the screenshot:" << seen;
  std::vector<std::uint32_t> tallest;
  for (std::size_t i = 0; i < areas.size(); ++i) {
    const auto [first, last] = areas[i];
    const bool identical = kPlottedCells[i].second == kBitIdenticalCell;
    const std::string where =
        kPlottedCells[i].second + ", rows " + std::to_string(first) + "-" + std::to_string(last);
    EXPECT_EQ(PixelsNear(*image, kBarColour, first, last + 40) > 50u, !identical) << where;
    EXPECT_EQ(PixelsNear(*image, kFlipColour, first - 20, first) > 10u, !identical) << where;
    if (kPlottedCells[i].first == "wiki" && !identical) {
      tallest.push_back(TallestBar(*image, first, last));
    }
  }
  // One scale: the cells' bars differ in height (attention=flash's largest KLD, at a
  // near-tie, is decades below kv=q4_0's), where per-plot scales would take each to the top
  // of its frame.
  ASSERT_EQ(tallest.size(), 3u);
  EXPECT_LT(tallest[0] + 20, tallest[2]) << "attention=flash vs kv=q4_0";
}

}  // namespace
}  // namespace orch::report
