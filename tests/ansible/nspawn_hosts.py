"""Debian 12 test hosts booted with systemd-nspawn for tests/ansible/deploy_test.py: the
minbase rootfs (built once with mmdebstrap, cached by the hash of its package list), the
check that it holds every dependency of the packages under test, and one booted host (a
volatile overlay of the rootfs, its sshd on its own loopback port), stopped by its pid.
"""

import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# What every host boots with, besides the runtime libraries the packages need
# (rootfs-packages.txt).
BASE_PACKAGES = ["systemd", "systemd-sysv", "dbus", "openssh-server", "python3", "python3-apt"]


def log(message):
    print(f"test-ansible: {message}", flush=True)


class Failure(Exception):
    pass


def run(cmd, timeout=600, check=True, env=None, quiet=False):
    """Runs cmd; returns (rc, stdout+stderr). Raises Failure on a non-zero rc if check."""
    try:
        done = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired as expired:
        raise Failure(f"timed out after {timeout} s: {' '.join(cmd)}\n{expired.output or ''}")
    if not quiet and done.returncode != 0 and check:
        sys.stdout.write(done.stdout[-6000:])
    if check and done.returncode != 0:
        raise Failure(f"exit {done.returncode}: {' '.join(cmd)}")
    return done.returncode, done.stdout


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_list(path):
    with open(path) as f:
        return [line.split("#")[0].strip() for line in f if line.split("#")[0].strip()]


def build_rootfs(work):
    """The minbase rootfs, cached under work/ by the hash of what it is made of."""
    packages = BASE_PACKAGES + read_list(os.path.join(HERE, "rootfs-packages.txt"))
    key = hashlib.sha256(("bookworm minbase " + " ".join(packages)).encode()).hexdigest()[:16]
    rootfs = os.path.join(work, f"rootfs-{key}")
    if os.path.exists(os.path.join(rootfs, ".complete")):
        log(f"rootfs: cached {rootfs}")
        return rootfs
    for old in os.listdir(work):
        if old.startswith("rootfs-"):
            shutil.rmtree(os.path.join(work, old), ignore_errors=True)
    log(f"rootfs: mmdebstrap bookworm ({len(packages)} packages), about 3 minutes")
    started = time.monotonic()
    partial = rootfs + ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    run(["mmdebstrap", "--variant=minbase", "--include=" + ",".join(packages),
         '--customize-hook=mkdir -p -m 700 "$1/root/.ssh"',
         '--customize-hook=touch "$1/etc/hostname"',
         "bookworm", partial], timeout=1200)
    os.rename(partial, rootfs)
    open(os.path.join(rootfs, ".complete"), "w").close()
    log(f"rootfs: built in {time.monotonic() - started:.0f} s")
    return rootfs


def check_dependencies(rootfs, debs):
    """Every dependency of the packages the hosts install is in the rootfs (the hosts
    install offline, as from a local mirror); virtual packages count by what provides
    them."""
    _, listing = run(["dpkg-query", f"--admindir={rootfs}/var/lib/dpkg", "-W",
                      "-f=${Status}\t${Package}\t${Provides}\n"])
    present = set()
    for line in listing.splitlines():
        status, package, provides = (line.split("\t") + ["", "", ""])[:3]
        if status == "install ok installed":
            present.add(package)
            present.update(p.strip().split(" ")[0] for p in provides.split(",") if p.strip())
    missing = []
    for deb in debs:
        _, depends = run(["dpkg-deb", "-f", deb, "Depends"])
        for clause in filter(None, (c.strip() for c in depends.split(","))):
            names = [alt.strip().split(" ")[0].split(":")[0] for alt in clause.split("|")]
            if not any(name.startswith("orch") or name in present for name in names):
                missing.append(f"{clause} (of {os.path.basename(deb)})")
    if missing:
        raise Failure("the test rootfs lacks dependencies: " + "; ".join(missing) +
                      ": add them to tests/ansible/rootfs-packages.txt")


class Host:
    def __init__(self, name, rootfs, run_dir, public_key):
        self.name = name
        self.port = free_port()
        self.dir = os.path.join(run_dir, name)
        os.makedirs(self.dir)
        with open(os.path.join(self.dir, "sshd.conf"), "w") as f:
            f.write(f"Port {self.port}\nListenAddress 127.0.0.1\n")
        with open(os.path.join(self.dir, "hostname"), "w") as f:
            f.write(name + "\n")
        self.log = open(os.path.join(self.dir, "console.log"), "w")
        cmd = ["systemd-nspawn", "--register=no", "--keep-unit", "-q", "-D", rootfs,
               "--volatile=overlay", "-M", name,
               f"--bind-ro={self.dir}/sshd.conf:/etc/ssh/sshd_config.d/orch-test.conf",
               f"--bind-ro={self.dir}/hostname:/etc/hostname",
               f"--bind-ro={public_key}:/root/.ssh/authorized_keys", "-b"]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # nspawn powers the container off
            try:
                self.proc.wait(timeout=40)
            except subprocess.TimeoutExpired:
                log(f"{self.name}: no clean poweroff in 40 s; SIGKILL to pid {self.proc.pid}")
                self.proc.kill()
                self.proc.wait(timeout=20)
        self.log.close()
