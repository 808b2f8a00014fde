#!/usr/bin/env bash
# scripts/check-layers: passes on this repository; on a small tree it names an upward
# include, an include of a folder that is not linked, an upward link, and a link and an
# include of a lower folder that the folder may not use (the agent of the coordinator),
# and fails.
set -euo pipefail
root="$1"
"$root/scripts/check-layers" "$root" >/dev/null

tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree/base" "$tree/store" "$tree/report" "$tree/coordinator" "$tree/agent"
echo 'add_library(orch_base status.cc)' >"$tree/base/CMakeLists.txt"
printf '#include "base/status.h"\n#include "coordinator/core.h"\n' >"$tree/base/status.cc"
echo 'target_link_libraries(orch_store PUBLIC orch_base orch_report)' >"$tree/store/CMakeLists.txt"
printf '#include "base/status.h"\n' >"$tree/store/kv.cc"
echo 'target_link_libraries(orch_report PUBLIC orch_base)' >"$tree/report/CMakeLists.txt"
printf '#include "store/store.h"\n' >"$tree/report/report.cc"
echo 'target_link_libraries(orch_coordinator PUBLIC orch_base)' >"$tree/coordinator/CMakeLists.txt"
echo 'target_link_libraries(orch_agent PUBLIC orch_base orch_coordinator)' >"$tree/agent/CMakeLists.txt"
printf '#include "base/status.h"\n#include "coordinator/core.h"\n' >"$tree/agent/agent.cc"

rc=0
err=$("$root/scripts/check-layers" "$tree" 2>&1 >/dev/null) || rc=$?
fail() { echo "check_layers_test: $1"; echo "$err"; exit 1; }
[ "$rc" -eq 1 ] || fail "expected exit status 1, got $rc"
grep -q 'base/status.cc:2: includes coordinator/, a layer above base' <<<"$err" ||
  fail "the upward include is not named"
grep -q "report/report.cc:1: includes store/, but report's CMakeLists.txt does not link orch_store" \
  <<<"$err" || fail "the unlinked include is not named"
grep -q 'store/CMakeLists.txt: links report, a layer above store' <<<"$err" ||
  fail "the upward link is not named"
grep -q "agent/CMakeLists.txt: links coordinator, which agent may not use" <<<"$err" ||
  fail "the link of a folder the agent may not use is not named"
grep -q "agent/agent.cc:2: includes coordinator/, which agent may not use" <<<"$err" ||
  fail "the include of a folder the agent may not use is not named"
grep -q 'check-layers: 5 include(s) break the layers' <<<"$err" || fail "the count is wrong"
echo "check_layers_test: ok"
