// The coordinator's metrics listener end to end: the real `orch coordinator` daemon
// with metrics_listen, an agent running the test driver, jobs run through it, and
// /metrics, the status page and a report fetched over real sockets on 127.0.0.1
// (the page also in headless Chromium). Every wait is bounded; LocalCluster stops
// every process it started by pid.
// clang-format off
#include <utility>  // before Boost.Asio under C++20 (Debian 12)
#include <boost/asio.hpp>
// clang-format on

#include <gtest/gtest.h>

#include <fstream>
#include <regex>

#include "cli/child_process.h"

#include "tests/e2e/local_cluster.h"
#include "tests/support/subprocess.h"

namespace orch::testing {
namespace {

using namespace std::chrono_literals;
using tcp = boost::asio::ip::tcp;

constexpr int kJobs = 4;
constexpr int kPositions = 6;

struct HttpResult {
  int status = 0;
  std::string body;
};

// GET http://127.0.0.1:PORT/TARGET over a blocking socket.
HttpResult Get(int port, const std::string& target, const std::string& headers = "") {
  boost::asio::io_context io;
  tcp::socket socket(io);
  socket.connect(
      tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)));
  std::string request =
      "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + headers + "Connection: close\r\n\r\n";
  boost::asio::write(socket, boost::asio::buffer(request));
  std::string reply;
  boost::system::error_code error;
  char buffer[8192];
  for (int i = 0; i < 100000 && !error; ++i) {
    reply.append(buffer, socket.read_some(boost::asio::buffer(buffer), error));
  }
  HttpResult result;
  if (reply.size() > 12) result.status = std::stoi(reply.substr(9, 3));
  std::size_t body = reply.find("\r\n\r\n");
  if (body != std::string::npos) result.body = reply.substr(body + 4);
  return result;
}

// The value of the sample line `series` (name and labels exactly as written); -1 when
// absent.
double Sample(const std::string& text, const std::string& series) {
  std::size_t at = text.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + series.size() + 2));
}

// The port of a metrics listener, from the metrics.endpoint file it wrote in `dir`.
int PortIn(const std::filesystem::path& dir) {
  std::ifstream in(dir / "metrics.endpoint");
  std::string url;
  std::getline(in, url);
  std::smatch match;
  if (!std::regex_match(url, match, std::regex(R"(http://127\.0\.0\.1:(\d+))"))) return -1;
  return std::stoi(match[1]);
}

// The coordinator's (DATA_DIR/metrics.endpoint).
int MetricsPort(const LocalCluster& cluster) { return PortIn(cluster.data_dir()); }

// Agent `id`'s (its spool folder's metrics.endpoint).
int AgentMetricsPort(const LocalCluster& cluster, const std::string& id) {
  return PortIn(cluster.dir() / ("spool-" + id));
}

// An agent running the test driver with its own metrics listener on a free port.
void StartAgentWithMetrics(LocalCluster& cluster, const std::string& id) {
  cluster.StartAgent(id, {{"test", "test-engine@1", TestDriverBinary()}},
                     "metrics_listen = \"127.0.0.1:0\"\n");
  ASSERT_TRUE(LocalCluster::WaitUntil([&] { return AgentMetricsPort(cluster, id) > 0; }, 30s))
      << cluster.Logs();
}

void RunJobs(LocalCluster& cluster, const std::string& experiment) {
  std::ofstream(cluster.dir() / "spec.toml") << TestEngineSpec(experiment, kJobs, kPositions, 0);
  ProcessResult r = cluster.Client({"submit", (cluster.dir() / "spec.toml").string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << cluster.Logs();
  bool done = LocalCluster::WaitUntil(
      [&] {
        std::optional<nlohmann::json> p = cluster.Progress(experiment);
        return p && p->value("succeeded", 0) == kJobs;
      },
      60s);
  ASSERT_TRUE(done) << cluster.Logs();
}

TEST(MetricsEndpointTest, CountsMoveWithTheJobsRun) {
  LocalCluster cluster("metrics");
  ASSERT_NO_FATAL_FAILURE(
      cluster.StartCoordinator("tcp://127.0.0.1:*", "metrics_listen = \"127.0.0.1:0\"\n"));
  int port = MetricsPort(cluster);
  ASSERT_GT(port, 0) << cluster.Logs();
  HttpResult before = Get(port, "/metrics");
  ASSERT_EQ(before.status, 200) << before.body;
  EXPECT_EQ(Sample(before.body, "orch_assignments_total"), 0) << before.body;
  EXPECT_EQ(Sample(before.body, "orch_run_duration_seconds_count"), 0) << before.body;

  ASSERT_NO_FATAL_FAILURE(cluster.StartAgent("a1"));
  ASSERT_NO_FATAL_FAILURE(RunJobs(cluster, "e2e-metrics"));
  HttpResult after = Get(port, "/metrics");
  ASSERT_EQ(after.status, 200);
  const std::string& m = after.body;
  EXPECT_EQ(Sample(m, "orch_jobs{experiment=\"e2e-metrics\",state=\"succeeded\"}"), kJobs) << m;
  EXPECT_EQ(Sample(m, "orch_jobs{experiment=\"e2e-metrics\",state=\"pending\"}"), 0) << m;
  EXPECT_EQ(Sample(m, "orch_assignments_total"), kJobs) << m;
  EXPECT_EQ(Sample(m, "orch_records_received_total{agent=\"a1\"}"), kJobs * kPositions) << m;
  EXPECT_EQ(Sample(m, "orch_run_duration_seconds_count"), kJobs) << m;
  EXPECT_EQ(Sample(m, "orch_agents{state=\"up\"}"), 1) << m;
  EXPECT_GT(Sample(m, "orch_message_handling_seconds_count"), 0) << m;
  EXPECT_GT(Sample(m, "orch_store_sync_seconds_count"), 0) << m;
  EXPECT_GT(Sample(m, "orch_store_size_bytes"), 0) << m;

  HttpResult page = Get(port, "/");
  ASSERT_EQ(page.status, 200);
  EXPECT_NE(page.body.find("<tr data-experiment=\"e2e-metrics\">"), std::string::npos) << page.body;
  EXPECT_NE(page.body.find("<td>a1</td>"), std::string::npos) << page.body;
  HttpResult report = Get(port, "/report/e2e-metrics");
  ASSERT_EQ(report.status, 200) << report.body;
  EXPECT_NE(report.body.find("<html"), std::string::npos);
  EXPECT_NE(report.body.find("e2e-metrics"), std::string::npos);
  EXPECT_EQ(Get(port, "/report/no-such-experiment").status, 404);
}

// The agent's own listener (docs/metrics-endpoint.md, "Agent metrics"): what it ran,
// counted on its side, agrees with the jobs the coordinator saw succeed.
TEST(MetricsEndpointTest, AnAgentCountsItsOwnRuns) {
  LocalCluster cluster("metrics-agent");
  ASSERT_NO_FATAL_FAILURE(cluster.StartCoordinator("tcp://127.0.0.1:*"));
  ASSERT_NO_FATAL_FAILURE(StartAgentWithMetrics(cluster, "a1"));
  int port = AgentMetricsPort(cluster, "a1");
  ASSERT_TRUE(LocalCluster::WaitUntil(
      [&] { return Sample(Get(port, "/metrics").body, "orch_agentd_registered") == 1; }, 30s))
      << cluster.Logs();
  HttpResult before = Get(port, "/metrics");
  EXPECT_EQ(Sample(before.body, "orch_agentd_assignments_total"), 0) << before.body;
  EXPECT_EQ(Sample(before.body, "orch_agentd_run_duration_seconds_count"), 0) << before.body;

  ASSERT_NO_FATAL_FAILURE(RunJobs(cluster, "e2e-agent-metrics"));
  // The last run's end is counted as its RunFinished is spooled, before the
  // coordinator stores it, so it is there once the coordinator says succeeded.
  HttpResult after = Get(port, "/metrics");
  ASSERT_EQ(after.status, 200);
  const std::string& m = after.body;
  EXPECT_NE(m.find("\norch_agentd_info{agent=\"a1\",hardware=\"cpu\",fingerprint=\""),
            std::string::npos)
      << m;
  EXPECT_EQ(Sample(m, "orch_agentd_registered"), 1) << m;
  EXPECT_EQ(Sample(m, "orch_agentd_slots"), 1) << m;
  EXPECT_EQ(Sample(m, "orch_agentd_assignments_total"), kJobs) << m;
  EXPECT_EQ(Sample(m, "orch_agentd_runs_total{driver=\"test\",status=\"succeeded\"}"), kJobs) << m;
  EXPECT_EQ(Sample(m, "orch_agentd_records_total{driver=\"test\"}"), kJobs * kPositions) << m;
  EXPECT_EQ(Sample(m, "orch_agentd_run_duration_seconds_count"), kJobs) << m;
  // The test driver offers sessions: one session, the other jobs fed to it warm.
  EXPECT_EQ(Sample(m, "orch_agentd_warm_sessions_started_total{driver=\"test\"}"), 1) << m;
  EXPECT_EQ(Sample(m, "orch_agentd_warm_jobs_total{driver=\"test\"}"), kJobs - 1) << m;
  EXPECT_EQ(Sample(m, "orch_agentd_driver_quarantined{driver=\"test\",engine=\"test-engine@1\"}"),
            0)
      << m;
  EXPECT_EQ(Get(port, "/").status, 404);
}

TEST(MetricsEndpointTest, AViewerTokenIsRequiredWhenConfigured) {
  LocalCluster cluster("metrics-token");
  std::ofstream(cluster.dir() / "viewer.token") << "tok-123\n";
  ASSERT_NO_FATAL_FAILURE(cluster.StartCoordinator(
      "tcp://127.0.0.1:*",
      "metrics_listen = \"0.0.0.0:0\"\nmetrics_viewer_token_file = \"viewer.token\"\n"));
  std::ifstream in(cluster.data_dir() / "metrics.endpoint");
  std::string url;
  std::getline(in, url);
  int port = std::stoi(url.substr(url.rfind(':') + 1));
  EXPECT_EQ(Get(port, "/metrics").status, 401);
  EXPECT_EQ(Get(port, "/", "Authorization: Bearer wrong\r\n").status, 401);
  HttpResult ok = Get(port, "/metrics", "Authorization: Bearer tok-123\r\n");
  EXPECT_EQ(ok.status, 200);
  EXPECT_NE(ok.body.find("# TYPE orch_jobs gauge"), std::string::npos) << ok.body;
}

// The status page as a browser shows it: headless Chromium (scripts/setup
// --with-test-tools) loads it from the listener and its DOM holds the experiment's row.
TEST(MetricsEndpointTest, ChromiumShowsTheExperimentRow) {
  const char* chromium = "/usr/bin/chromium";
  ASSERT_TRUE(std::filesystem::exists(chromium)) << "headless Chromium is not installed";
  LocalCluster cluster("metrics-page");
  ASSERT_NO_FATAL_FAILURE(
      cluster.StartCoordinator("tcp://127.0.0.1:*", "metrics_listen = \"127.0.0.1:0\"\n"));
  ASSERT_NO_FATAL_FAILURE(cluster.StartAgent("a1"));
  ASSERT_NO_FATAL_FAILURE(RunJobs(cluster, "e2e-page"));
  int port = MetricsPort(cluster);
  ProcessResult dom =
      RunProcess({chromium, "--headless", "--no-sandbox", "--disable-gpu",
                  "--user-data-dir=" + (cluster.dir() / "chromium-profile").string(),
                  "--no-first-run", "--no-default-browser-check", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--disable-extensions",
                  "--dump-dom", "http://127.0.0.1:" + std::to_string(port) + "/"},
                 60s);
  ASSERT_FALSE(dom.timed_out);
  ASSERT_EQ(dom.exit_code, 0) << dom.err;
  std::regex row(R"(<tr data-experiment="e2e-page"><td>e2e-page</td><td class="n">4</td>)");
  EXPECT_TRUE(std::regex_search(dom.out, row)) << dom.out;
  EXPECT_NE(dom.out.find("href=\"/report/e2e-page\""), std::string::npos) << dom.out;
}

// A real Prometheus (Debian's `prometheus`, scripts/debian-test-packages.txt) scrapes the
// endpoint every second; its query API then returns the coordinator's job count.
TEST(MetricsEndpointTest, PrometheusScrapesTheEndpoint) {
  const char* prometheus = "/usr/bin/prometheus";
  ASSERT_TRUE(std::filesystem::exists(prometheus))
      << "Prometheus is not installed (scripts/setup --with-test-tools)";
  LocalCluster cluster("metrics-prometheus");
  ASSERT_NO_FATAL_FAILURE(
      cluster.StartCoordinator("tcp://127.0.0.1:*", "metrics_listen = \"127.0.0.1:0\"\n"));
  ASSERT_NO_FATAL_FAILURE(StartAgentWithMetrics(cluster, "a1"));
  ASSERT_NO_FATAL_FAILURE(RunJobs(cluster, "e2e-prom"));
  int port = MetricsPort(cluster);
  int agent_port = AgentMetricsPort(cluster, "a1");
  int web = LocalCluster::FreePort();
  std::filesystem::path config = cluster.dir() / "prometheus.yml";
  std::ofstream(config) << "global:\n  scrape_interval: 1s\n"
                        << "scrape_configs:\n  - job_name: orch\n    static_configs:\n"
                        << "      - targets: ['127.0.0.1:" << port << "']\n"
                        << "  - job_name: orch-agents\n    static_configs:\n"
                        << "      - targets: ['127.0.0.1:" << agent_port << "']\n";
  Result<cli::ChildProcess> server =
      cli::ChildProcess::Start({prometheus, "--config.file=" + config.string(),
                                "--storage.tsdb.path=" + (cluster.dir() / "tsdb").string(),
                                "--web.listen-address=127.0.0.1:" + std::to_string(web)},
                               (cluster.dir() / "prometheus.log").string());
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  std::string query = "/api/v1/query?query=orch_jobs%7Bstate%3D%22succeeded%22%7D";
  std::string answer;
  bool scraped = LocalCluster::WaitUntil(
      [&] {
        try {
          answer = Get(web, query).body;
        } catch (const boost::system::system_error&) {
          return false;  // not listening yet
        }
        return answer.find("\"e2e-prom\"") != std::string::npos;
      },
      60s);
  // The agent's own series, from its target.
  std::string agent_query =
      "/api/v1/query?query=orch_agentd_runs_total%7Bstatus%3D%22succeeded%22%7D";
  std::string agent_answer;
  bool agent_scraped =
      scraped && LocalCluster::WaitUntil(
                     [&] {
                       agent_answer = Get(web, agent_query).body;
                       return agent_answer.find("\"orch-agents\"") != std::string::npos;
                     },
                     60s);
  server->Stop(5s);
  ASSERT_TRUE(scraped) << answer;
  ASSERT_TRUE(agent_scraped) << agent_answer;
  nlohmann::json agent_parsed = nlohmann::json::parse(agent_answer);
  EXPECT_EQ(agent_parsed["data"]["result"][0]["value"][1], std::to_string(kJobs)) << agent_answer;
  nlohmann::json parsed = nlohmann::json::parse(answer);
  ASSERT_EQ(parsed["status"], "success") << answer;
  const nlohmann::json& result = parsed["data"]["result"][0];
  EXPECT_EQ(result["metric"]["experiment"], "e2e-prom") << answer;
  EXPECT_EQ(result["value"][1], std::to_string(kJobs)) << answer;
}

}  // namespace
}  // namespace orch::testing
