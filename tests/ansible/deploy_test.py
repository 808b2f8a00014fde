#!/usr/bin/python3
"""Deploys orch with ansible/site.yml onto real booted Debian 12 hosts and checks it.

Three hosts are booted on this machine with systemd-nspawn (systemd as PID 1, sshd),
each a volatile overlay of one cached minbase rootfs, sharing the loopback network with
distinct sshd ports. Ansible reaches them over SSH as any lab host. Checked, in order:
site.yml converges; the services are active under systemd; both agents registered
(orch status --json from the control node, with a submitter key); a small experiment
submitted from the control node completes across the two agents; a second site.yml run
changes nothing; `systemctl restart` of an agent in the middle of a run loses nothing
(its running run finishes, nothing fails or is cancelled); drain.yml drains an agent
(it finishes, exits and stays stopped) and site.yml brings it back to work; the rendered
units pass `systemd-analyze verify`, and `systemd-analyze security` exposure scores are
recorded (and must not grow past the limits below).

Every container is stopped by its pid (SIGTERM: a clean poweroff), the overlays live in
nspawn's own mount namespace, and every wait is bounded. Run by scripts/test-ansible.
"""


import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from nspawn_hosts import Failure, Host, build_rootfs, check_dependencies, free_port, log, run  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.join(ROOT, "tests", "ansible")
# The exposure scores measured when the units were written; a change that weakens the
# hardening past these fails the test (systemd-analyze security: 0 safest, 10 unsafe).
MAX_EXPOSURE = {"orch-coordinator.service": 1.5, "orch-agent.service": 2.0}  # measured 1.4, 1.9
HOSTS = ["orch-coord", "agent-a", "agent-b"]


class Cluster:
    def __init__(self, args):
        self.args = args
        self.build = os.path.abspath(args.build_dir)
        self.orch = os.path.join(self.build, "cli", "orch")
        self.work = os.path.join(self.build, "ansible-test")
        self.run_dir = os.path.join(self.work, "run")
        self.hosts = {}
        self.coordinator_port = free_port()

    # --- set-up -------------------------------------------------------------------
    def prepare(self):
        os.makedirs(self.work, exist_ok=True)
        shutil.rmtree(self.run_dir, ignore_errors=True)
        os.makedirs(self.run_dir)
        self.packages = os.path.join(self.build, "packages")
        self.debs = sorted(os.path.join(self.packages, f) for f in os.listdir(self.packages)
                           if f.startswith(("orch_", "orch-driver-llamacpp-")) and f.endswith(".deb"))
        if not any(os.path.basename(d).startswith("orch_") for d in self.debs):
            raise Failure(f"no orch package in {self.packages}: run scripts/package first")
        self.version = os.path.basename([d for d in self.debs if "/orch_" in d][0]).split("_")[1]
        self.rootfs = build_rootfs(self.work)
        check_dependencies(self.rootfs, self.debs)
        self.key = os.path.join(self.run_dir, "ssh_key")
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", self.key])
        os.makedirs(os.path.join(self.run_dir, "keys"))
        run([self.orch, "keygen", "alice", "--role", "submitter", "--dir",
             os.path.join(self.run_dir, "keys")])

    def boot(self):
        os.makedirs("/run/systemd/nspawn", exist_ok=True)
        for name in HOSTS:
            self.hosts[name] = Host(name, self.rootfs, self.run_dir, self.key + ".pub")
            log(f"{name}: booting (nspawn pid {self.hosts[name].proc.pid}, sshd port "
                f"{self.hosts[name].port})")
        deadline = time.monotonic() + 120
        for name, host in self.hosts.items():
            while True:
                if host.proc.poll() is not None:
                    raise Failure(f"{name}: nspawn exited {host.proc.returncode}; see {host.dir}/console.log")
                rc, out = self.ssh(name, "systemctl is-system-running --wait", check=False, timeout=60)
                if out.strip() in ("running", "degraded"):
                    if out.strip() == "degraded":
                        log(f"{name}: degraded: {self.ssh(name, 'systemctl --failed --no-legend', check=False)[1].strip()}")
                    break
                if time.monotonic() > deadline:
                    raise Failure(f"{name}: not up after 120 s: {out.strip()}")
                time.sleep(1)
            log(f"{name}: up")

    def ssh(self, name, command, check=True, timeout=120):
        host = self.hosts[name]
        return run(["ssh", "-i", self.key, "-p", str(host.port), "-o", "BatchMode=yes",
                    "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
                    "-o", "LogLevel=ERROR", "-o", "ConnectTimeout=5", "root@127.0.0.1", command],
                   check=check, timeout=timeout)

    def write_inventory(self):
        common = {
            "ansible_host": "127.0.0.1",
            "ansible_user": "root",
            "ansible_ssh_private_key_file": self.key,
            "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null",
            "ansible_python_interpreter": "/usr/bin/python3",
            "orch_common_package_dir": self.packages,
            "orch_common_version": self.version,
            "orch_common_coordinator_address": "127.0.0.1",
            "orch_common_coordinator_port": self.coordinator_port,
            "orch_common_fetch_dir": os.path.join(self.run_dir, "fetched-keys"),
            "orch_coordinator_listen": f"tcp://127.0.0.1:{self.coordinator_port}",
            "orch_coordinator_users": [
                {"name": "alice", "key_file": os.path.join(self.run_dir, "keys", "alice.key")}],
            "orch_agent_hardware": "cpu",
            "orch_agent_gpus": 0,
            "orch_agent_driver_threads": 1,
            "orch_agent_run_timeout_ms": 300000,
            "orch_agent_stop_drain_s": 120,
        }
        port = {name: {"ansible_port": host.port} for name, host in self.hosts.items()}
        inventory = {"all": {"vars": common, "children": {
            "coordinators": {"hosts": {"orch-coord": port["orch-coord"]}},
            "agents": {"children": {
                "cpu_nodes": {"hosts": {"agent-a": port["agent-a"], "agent-b": port["agent-b"]}},
                "gpu_boxes": {"hosts": {}}}}}}}
        self.inventory = os.path.join(self.run_dir, "inventory.yml")
        with open(self.inventory, "w") as f:
            json.dump(inventory, f, indent=2)  # JSON is YAML

    def playbook(self, name, *extra):
        env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible", "ansible.cfg"),
                   ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1")
        log(f"ansible-playbook {name} {' '.join(extra)}")
        started = time.monotonic()
        out = self.stream(["ansible-playbook", "-i", self.inventory,
                           os.path.join(ROOT, "ansible", name), *extra],
                          os.path.join(self.run_dir, f"{name}.{int(started)}.log"), env, 900)
        recap = {m.group(1): {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(2))}
                 for m in re.finditer(r"^(\S+)\s+:\s+(ok=.*)$", out, re.M)}
        log(f"  {time.monotonic() - started:.0f} s; " +
            ", ".join(f"{h}: changed={r['changed']}" for h, r in recap.items()))
        return recap, out

    @staticmethod
    def stream(cmd, log_path, env, timeout):
        """Runs cmd with its whole output in log_path, printing the failures as they come
        (a slow step shows while it runs, not after the timeout); returns the output.
        Raises Failure on a non-zero exit or past timeout s (the process is killed)."""
        lines = []
        with open(log_path, "w") as log_file:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True, env=env,
                                    start_new_session=True)
            timer = threading.Timer(timeout, lambda: os.killpg(proc.pid, signal.SIGKILL))
            timer.start()
            try:
                for line in proc.stdout:
                    log_file.write(line)
                    log_file.flush()
                    lines.append(line)
                    if line.startswith(("fatal:", "failed:", "ERROR!")) or "FAILED - RETRYING" in line:
                        print(f"    {line.rstrip()[:400]}", flush=True)
                rc = proc.wait()
            finally:
                timer.cancel()
        out = "".join(lines)
        if rc == -signal.SIGKILL:
            raise Failure(f"timed out after {timeout} s: {' '.join(cmd)} (log: {log_path})")
        if rc != 0:
            sys.stdout.write(out[-6000:])
            raise Failure(f"exit {rc}: {' '.join(cmd)} (log: {log_path})")
        return out

    # --- the CLI on the control node ----------------------------------------------
    def orch_client(self, *args, check=True):
        flags = ["--coordinator", f"tcp://127.0.0.1:{self.coordinator_port}",
                 "--key", os.path.join(self.run_dir, "keys", "alice.key_secret"),
                 "--coordinator-key", os.path.join(self.run_dir, "fetched-keys", "coordinator.key")]
        return run([self.orch, *args, *flags], check=check, timeout=60)

    def status(self, experiment=None):
        args = ["status", "--json"] + ([experiment, "--jobs"] if experiment else [])
        return json.loads(self.orch_client(*args)[1])

    def wait_for(self, what, predicate, timeout):
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise Failure(f"{what}: not within {timeout} s")
            time.sleep(1)

    def experiment_done(self, name):
        progress = [e for e in self.status(name)["experiments"] if e["experiment"] == name]
        if progress and progress[0]["pending"] == 0 and progress[0]["running"] == 0:
            return progress[0]
        return None

    # --- the checks -----------------------------------------------------------------
    def check_services(self):
        for name, unit in (("orch-coord", "orch-coordinator"), ("agent-a", "orch-agent"),
                           ("agent-b", "orch-agent")):
            _, state = self.ssh(name, f"systemctl is-active {unit}.service", check=False)
            if state.strip() != "active":
                _, journal = self.ssh(name, f"journalctl -u {unit} --no-pager -n 30", check=False)
                raise Failure(f"{name}: {unit} is {state.strip()}\n{journal}")
            _, user = self.ssh(name, f"ps -o user= -C orch", check=False)
            if set(user.split()) != {"orch"}:
                raise Failure(f"{name}: orch runs as {user.split()}, not as user orch")
        log("services active under systemd, running as user orch")

    def connected_agents(self):
        return {a["id"]: a for a in self.status()["agents"] if a["state"] == "up"}

    def check_registered(self):
        self.wait_for("agent-a and agent-b connected",
                      lambda: {"agent-a", "agent-b"} <= set(self.connected_agents()), 60)
        engines = {i: sorted(a["engines"]) for i, a in self.connected_agents().items()}
        for agent, offered in engines.items():
            if offered != ["llama.cpp@b8390", "llama.cpp@v0.4.0"]:
                raise Failure(f"{agent} offers {offered}, not both llama.cpp drivers")
        log(f"agents registered: {engines}")

    def submit(self, spec):
        self.orch_client("submit", os.path.join(HERE, spec))

    def check_experiment(self, name, timeout=300):
        done = self.wait_for(f"experiment {name} done", lambda: self.experiment_done(name), timeout)
        if done["succeeded"] != done["total"] or done["failed"] or done["cancelled"]:
            failures = [j for j in self.status(name)["jobs"] if j["state"] != "succeeded"]
            raise Failure(f"{name}: {done}; not succeeded: {failures[:3]}")
        jobs = self.status(name)["jobs"]
        agents = sorted({j["agent"] for j in jobs})
        log(f"{name}: {done['succeeded']}/{done['total']} succeeded on {agents}")
        return jobs

    def check_idempotent(self):
        recap, out = self.playbook("site.yml")
        changed = {h: r["changed"] for h, r in recap.items() if r["changed"]}
        if changed:
            raise Failure(f"second site.yml run changed something: {changed}\n" +
                          "\n".join(line for line in out.splitlines() if line.startswith(("TASK", "changed"))))
        log("second site.yml run: changed=0 on every host")

    def check_restart(self):
        self.submit("restart.toml")
        running = self.wait_for("a run on agent-a", lambda: [
            j for j in self.status("deploy-restart")["jobs"]
            if j["state"] == "running" and j["agent"] == "agent-a"], 120)
        job = running[0]["id"]
        since = self.ssh("agent-a", "date +%s.%N")[1].strip()
        started = time.monotonic()
        self.ssh("agent-a", "systemctl restart orch-agent.service", timeout=300)
        took = time.monotonic() - started
        # The stop drained: the agent waited for the run in flight, not cancelled it.
        _, journal = self.ssh("agent-a", f"journalctl -u orch-agent --no-pager -o cat "
                                         f"--since @{since}")
        finishing = re.search(r"draining for up to \d+ ms: finishing (\d+) runs", journal)
        if not finishing or int(finishing.group(1)) < 1:
            raise Failure(f"the restart of agent-a drained no run in flight:\n{journal}")
        log(f"systemctl restart orch-agent on agent-a took {took:.1f} s: it drained "
            f"{finishing.group(1)} run(s) first (job {job[:12]} was running)")
        jobs = self.check_experiment("deploy-restart")
        that = [j for j in jobs if j["id"] == job][0]
        if that["attempts"] != 1:
            raise Failure(f"the run in flight at the restart ran {that['attempts']} times: {that}")
        if "agent-a" not in {j["agent"] for j in jobs if j["id"] != job}:
            log("note: agent-a took no job after its restart")

    def check_drain(self):
        self.playbook("drain.yml", "--limit", "agent-b")
        _, state = self.ssh("agent-b", "systemctl is-active orch-agent.service", check=False)
        if state.strip() != "inactive":
            raise Failure(f"agent-b after drain.yml: orch-agent is {state.strip()}, not inactive")
        _, result = self.ssh("agent-b", "systemctl show -p Result --value orch-agent.service")
        agent = [a for a in self.status()["agents"] if a["id"] == "agent-b"]
        if agent and agent[0]["state"] == "up":
            raise Failure("agent-b is still connected after drain.yml")
        log(f"drain.yml: agent-b drained and stopped (result {result.strip()}, "
            f"coordinator says {agent[0]['state'] if agent else 'gone'})")
        self.playbook("site.yml")  # starts it again; site.yml waits until it is connected
        self.submit("after-drain.toml")
        jobs = self.check_experiment("deploy-after-drain")
        if "agent-b" not in {j["agent"] for j in jobs}:
            raise Failure("agent-b took no work after it was started again")

    def check_units(self):
        scores = {}
        for name, unit in (("orch-coord", "orch-coordinator.service"), ("agent-a", "orch-agent.service")):
            # --man=no: the hosts have no man-db; the page itself is checked below.
            rc, out = self.ssh(name, f"systemd-analyze verify --man=no {unit}", check=False)
            if rc != 0 or out.strip():
                raise Failure(f"systemd-analyze verify {unit} on {name}: rc {rc}\n{out}")
            rc, _ = self.ssh(name, "test -s /usr/share/man/man1/orch.1.gz", check=False)
            if rc != 0:
                raise Failure(f"{name}: the unit's Documentation=man:orch(1) is not installed")
            _, out = self.ssh(name, f"systemd-analyze security --no-pager {unit}")
            match = re.search(r"Overall exposure level for \S+: ([0-9.]+) (\S+)", out)
            if not match:
                raise Failure(f"no exposure level in systemd-analyze security {unit}:\n{out}")
            scores[unit] = float(match.group(1))
            with open(os.path.join(self.work, f"security-{unit}.txt"), "w") as f:
                f.write(out)
            if scores[unit] > MAX_EXPOSURE[unit]:
                raise Failure(f"{unit}: exposure {scores[unit]} above {MAX_EXPOSURE[unit]}\n{out}")
        log("systemd-analyze verify: clean; security exposure: " +
            ", ".join(f"{u} {s}" for u, s in scores.items()))

    def collect_logs(self):
        """On a failure: each host's orch journal, into the run folder and the last lines
        here, so the reason is in the test's own output."""
        for name in self.hosts:
            unit = "orch-coordinator" if name == "orch-coord" else "orch-agent"
            _, journal = self.ssh(name, f"journalctl -u {unit} --no-pager -n 200",
                                  check=False, timeout=30)
            with open(os.path.join(self.run_dir, f"{name}.journal.txt"), "w") as f:
                f.write(journal)
            tail = journal.strip().splitlines()[-15:]
            log(f"{name}: journalctl -u {unit} (last {len(tail)} lines)")
            for line in tail:
                print(f"    {line}", flush=True)

    def stop(self):
        for name, host in self.hosts.items():
            host.stop()
            log(f"{name}: stopped (pid {host.proc.pid}, exit {host.proc.returncode})")
        with open("/proc/self/mountinfo") as f:
            left = [line for line in f if self.work in line]
        if left:
            raise Failure(f"mounts left behind: {left}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    parser.add_argument("--rootfs-only", action="store_true",
                        help="only build (or reuse) the cached rootfs, e.g. while other work runs")
    args = parser.parse_args()
    cluster = Cluster(args)
    if args.rootfs_only:
        os.makedirs(cluster.work, exist_ok=True)
        build_rootfs(cluster.work)
        return 0
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.monotonic()
    try:
        cluster.prepare()
        cluster.boot()
        cluster.write_inventory()
        cluster.playbook("site.yml")
        cluster.check_services()
        cluster.check_registered()
        cluster.submit("experiment.toml")
        jobs = cluster.check_experiment("deploy-check")
        if {j["agent"] for j in jobs} != {"agent-a", "agent-b"}:
            raise Failure(f"deploy-check ran on {sorted({j['agent'] for j in jobs})}, not on both agents")
        cluster.check_idempotent()
        cluster.check_restart()
        cluster.check_drain()
        cluster.check_units()
    except Failure as failure:
        log(f"FAILED: {failure}")
        try:
            cluster.collect_logs()
        except Failure as unreadable:
            log(f"journals unreadable: {unreadable}")
        log(f"logs: {cluster.run_dir}")
        return 1
    except KeyboardInterrupt:
        log("interrupted")
        return 130
    finally:
        try:
            cluster.stop()
        except Failure as failure:
            log(f"FAILED: {failure}")
            return 1
    log(f"passed in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
