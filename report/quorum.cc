#include "report/quorum.h"

#include <algorithm>
#include <map>
#include <set>

#include "report/job_runs.h"

namespace orch::report {
namespace {

// Indexes into `runs` of each group of equal streams, groups in order of their first run.
std::vector<std::vector<std::size_t>> GroupByStream(const std::vector<CellRun>& runs) {
  std::map<StreamIdentity, std::size_t> group_of;
  std::vector<std::vector<std::size_t>> groups;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    auto [it, inserted] = group_of.try_emplace(runs[i].stream, groups.size());
    if (inserted) groups.emplace_back();
    groups[it->second].push_back(i);
  }
  return groups;
}

bool Holds(const std::vector<CellRun>& runs, const std::vector<std::size_t>& group,
           const std::string& run_id) {
  return std::any_of(group.begin(), group.end(),
                     [&](std::size_t i) { return runs[i].identity.run_id == run_id; });
}

const std::vector<std::size_t>& Largest(const std::vector<CellRun>& runs,
                                        const std::vector<std::vector<std::size_t>>& groups,
                                        const std::string& preferred_run) {
  const std::vector<std::size_t>* best = &groups.front();
  for (const auto& group : groups) {
    const bool larger = group.size() > best->size();
    const bool preferred_tie = group.size() == best->size() && Holds(runs, group, preferred_run) &&
                               !Holds(runs, *best, preferred_run);
    if (larger || preferred_tie) best = &group;
  }
  return *best;
}

std::vector<std::string> Distinct(const std::vector<std::string>& values) {
  std::vector<std::string> out;
  for (const std::string& v : values) {
    if (!v.empty() && std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  }
  return out;
}

StreamGroup Describe(const std::vector<CellRun>& runs, const std::vector<std::size_t>& group) {
  StreamGroup out;
  std::vector<std::string> hosts, classes, contributors;
  for (std::size_t i : group) {
    const RunIdentity& id = runs[i].identity;
    out.runs.push_back(id.run_id);
    hosts.push_back(id.host);
    classes.push_back(id.fingerprint_class);
    contributors.push_back(id.contributor);
  }
  out.hosts = Distinct(hosts);
  out.classes = Distinct(classes);
  out.contributors = DistinctContributors(contributors);
  return out;
}

// Every group, the largest first; the agreeing group `first` leads its size.
std::vector<StreamGroup> Ordered(const std::vector<CellRun>& runs,
                                 const std::vector<std::vector<std::size_t>>& groups,
                                 const std::vector<std::size_t>& first) {
  std::vector<const std::vector<std::size_t>*> order;
  for (const auto& group : groups) order.push_back(&group);
  std::stable_sort(order.begin(), order.end(), [&first](const auto* a, const auto* b) {
    if (a->size() != b->size()) return a->size() > b->size();
    return a == &first && b != &first;
  });
  std::vector<StreamGroup> out;
  for (const auto* group : order) out.push_back(Describe(runs, *group));
  return out;
}

}  // namespace

std::vector<std::string> DistinctContributors(const std::vector<std::string>& names) {
  std::set<std::string> distinct(names.begin(), names.end());
  std::vector<std::string> out;
  if (distinct.erase(kLabContributor) > 0) out.push_back(kLabContributor);
  out.insert(out.end(), distinct.begin(), distinct.end());
  return out;
}

Quorum BuildQuorum(const std::vector<CellRun>& runs, const std::string& preferred_run) {
  Quorum out;
  out.runs = static_cast<int>(runs.size());
  if (runs.empty()) return out;
  const std::vector<std::vector<std::size_t>> groups = GroupByStream(runs);
  out.streams = static_cast<int>(groups.size());
  std::set<std::string> hosts, classes;
  std::vector<std::string> contributors, all;
  const std::vector<std::size_t>& largest = Largest(runs, groups, preferred_run);
  out.groups = Ordered(runs, groups, largest);
  for (std::size_t i : largest) {
    const RunIdentity& id = runs[i].identity;
    out.agreeing_runs.push_back(id.run_id);
    if (!id.host.empty()) hosts.insert(id.host);
    if (!id.fingerprint_class.empty()) classes.insert(id.fingerprint_class);
    contributors.push_back(id.contributor);
  }
  for (const CellRun& run : runs) all.push_back(run.identity.contributor);
  out.hosts = static_cast<int>(hosts.size());
  out.classes = static_cast<int>(classes.size());
  out.contributors = DistinctContributors(contributors);
  out.all_contributors = DistinctContributors(all);
  return out;
}

std::vector<Conflict> FindConflicts(const std::vector<CellRun>& runs) {
  std::vector<Conflict> out;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    for (std::size_t j = i + 1; j < runs.size(); ++j) {
      const RunIdentity& a = runs[i].identity;
      const RunIdentity& b = runs[j].identity;
      if (a.job_id != b.job_id || a.fingerprint_class.empty()) continue;
      if (a.fingerprint_class != b.fingerprint_class || runs[i].stream == runs[j].stream) {
        continue;
      }
      out.push_back({runs[i].repeat, a, b, std::nullopt});
    }
  }
  return out;
}

}  // namespace orch::report
