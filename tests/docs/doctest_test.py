#!/usr/bin/env python3
"""scripts/doctest on fixture docs: its markers, a passing and a failing walkthrough, the
processes a walkthrough leaves behind, and its time limit."""

import importlib.machinery
import importlib.util
import os
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "doctest"


def load_runner():
    loader = importlib.machinery.SourceFileLoader("doctest_runner", str(SCRIPT))
    spec = importlib.util.spec_from_loader("doctest_runner", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


runner = load_runner()


def running(pid):
    """Whether pid is a live process (a zombie waiting to be reaped is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


class Fixture:
    """A repository root with README.md (the given text) and a build whose cli/orch is
    a shell script that records its arguments."""

    def __init__(self, readme):
        self.tmp = tempfile.TemporaryDirectory(prefix="doctest-test-")
        self.dir = Path(self.tmp.name)
        self.root, self.build = self.dir / "repo", self.dir / "build"
        (self.root / "docs").mkdir(parents=True)
        (self.root / "examples").mkdir()
        (self.root / "examples" / "spec.toml").write_text("name = 1\n")
        (self.build / "cli").mkdir(parents=True)
        orch = self.build / "cli" / "orch"
        orch.write_text(f'#!/bin/sh\necho "orch $*" >> {self.dir}/orch-calls\n')
        orch.chmod(0o755)
        (self.root / "README.md").write_text(
            textwrap.dedent(readme).replace("TMP", str(self.dir)))

    def run(self, *args):
        return subprocess.run(
            [sys.executable, "-B", str(SCRIPT), "--root", str(self.root), "--build-dir",
             str(self.build), *args], capture_output=True, text=True, timeout=120,
            env=dict(os.environ, TMPDIR=str(self.dir)))  # scratch directories kept go here

    def close(self):
        self.tmp.cleanup()


class MarkerTest(unittest.TestCase):
    def parse(self, text):
        walkthroughs = {}
        runner.parse_doc(textwrap.dedent(text), "doc.md", walkthroughs)
        return walkthroughs

    def test_marked_blocks_form_walkthroughs_in_order(self):
        walks = self.parse("""\
            Text.

            ```
            not marked
            ```

            <!-- doctest one copy=examples port=7700 sub=HOST=127.0.0.1 -->
            ```sh
            echo a
            echo b
            ```
            <!-- doctest two -->
            ~~~
            echo c
            ~~~
            <!-- doctest one file=conf/x.toml -->
            ```toml
            k = 1
            ```
            """)
        self.assertEqual(sorted(walks), ["one", "two"])
        one = walks["one"]
        self.assertEqual([b.lines for b in one.blocks], [["echo a", "echo b"], ["k = 1"]])
        self.assertEqual([b.line for b in one.blocks], [9, 18])
        self.assertEqual([b.write_to for b in one.blocks], ["", "conf/x.toml"])
        self.assertEqual((one.copies, one.ports, one.subs),
                         (["examples"], ["7700"], [("HOST", "127.0.0.1")]))
        self.assertEqual(walks["two"].blocks[0].lines, ["echo c"])

    def test_a_marker_inside_an_unmarked_block_is_text(self):
        walks = self.parse("""\
            ````md
            <!-- doctest shown -->
            ```
            echo shown
            ```
            ````
            """)
        self.assertEqual(walks, {})

    def test_marker_mistakes_are_refused_with_their_line(self):
        for text, message in [
            ("<!-- doctest a -->\ntext\n", "doc.md:1: a doctest marker must be followed"),
            ("\n<!-- doctest a bogus=1 -->\n```\nx\n```\n", "doc.md:2: unknown doctest option"),
            ("<!-- doctest a port=x -->\n```\nx\n```\n", "port=x: expected a number"),
            ("<!-- doctest a sub=x -->\n```\nx\n```\n", "sub=x: expected sub=FROM=TO"),
            ("<!-- doctest a file=../x -->\n```\nx\n```\n", "expected a relative path"),
            ("<!-- doctest a -->\n```\nx\n", "doc.md:2: a fenced block that is never closed"),
        ]:
            with self.assertRaises(runner.MarkerError) as raised:
                self.parse(text)
            self.assertIn(message, str(raised.exception))


class RunTest(unittest.TestCase):
    def fixture(self, readme):
        fixture = Fixture(readme)
        self.addCleanup(fixture.close)
        return fixture

    def test_a_walkthrough_runs_as_one_terminal_with_the_builds_orch(self):
        f = self.fixture("""\
            <!-- doctest walk copy=examples port=7700 sub=HOST=127.0.0.1 -->
            ```sh
            mkdir lab && cd lab
            export GREETING=hello
            orch plan ../examples/spec.toml --coordinator tcp://HOST:7700
            ```
            <!-- doctest walk file=conf/c.toml -->
            ```
            listen = "tcp://HOST:7700"
            ```
            <!-- doctest walk -->
            ```sh
            cp conf/c.toml TMP/c.toml
            echo "$GREETING from $(basename "$PWD")" > TMP/greeting
            ```
            """)
        result = f.run("walk")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("doctest: walk passed (3 blocks", result.stdout)
        self.assertEqual((f.dir / "greeting").read_text(), "hello from lab\n")
        call = (f.dir / "orch-calls").read_text()
        self.assertRegex(call, r"^orch plan \.\./examples/spec\.toml --coordinator "
                               r"tcp://127\.0\.0\.1:[0-9]+\n$")
        port = call.rsplit(":", 1)[1].strip()
        self.assertNotEqual(port, "7700")
        self.assertEqual((f.dir / "c.toml").read_text(), f'listen = "tcp://127.0.0.1:{port}"\n')

    def test_a_failing_command_names_its_file_line_and_status(self):
        f = self.fixture("""\
            # Title

            <!-- doctest walk -->
            ```sh
            echo before
            ```
            <!-- doctest walk -->
            ```sh
            echo output of the failing block
            sh -c 'exit 3'
            echo after > TMP/after
            ```
            """)
        result = f.run("walk")
        self.assertEqual(result.returncode, 1)
        self.assertIn("walk FAILED", result.stderr)
        self.assertIn("failed at README.md:10: exit status 3", result.stderr)
        self.assertIn("command: sh -c 'exit 3'", result.stderr)
        self.assertIn("block: README.md:9", result.stderr)
        self.assertIn("output of the failing block", result.stderr)
        self.assertFalse((f.dir / "after").exists())

    def test_a_command_over_several_lines_is_named_by_its_first_line(self):
        # bash's $LINENO points at one of the lines of such a command, not always the first
        f = self.fixture("""\
            <!-- doctest walk -->
            ```sh
            echo before
            false \\
                with \\
                arguments
            ```
            """)
        result = f.run("walk")
        self.assertEqual(result.returncode, 1)
        self.assertIn("failed at README.md:4: exit status 1", result.stderr)
        self.assertIn("command: false with arguments", result.stderr)

    def test_only_the_named_walkthroughs_run(self):
        f = self.fixture("""\
            <!-- doctest good -->
            ```
            true
            ```
            <!-- doctest bad -->
            ```
            false
            ```
            """)
        self.assertEqual(f.run("good").returncode, 0)
        self.assertEqual(f.run().returncode, 1)
        listed = f.run("--list")
        self.assertEqual(listed.stdout, "good\tREADME.md\t1 blocks\nbad\tREADME.md\t1 blocks\n")
        unknown = f.run("nosuch")
        self.assertEqual(unknown.returncode, 2)
        self.assertIn("no walkthrough nosuch (known: bad, good)", unknown.stderr)

    def test_background_processes_are_stopped_when_the_walkthrough_ends(self):
        for outcome, last in (("passed", "true"), ("FAILED", "false")):
            f = self.fixture(f"""\
                <!-- doctest walk -->
                ```sh
                sleep 300 &
                echo $! > TMP/pid
                (trap '' TERM; sleep 300) &
                echo $! > TMP/stubborn
                {last}
                ```
                """)
            result = f.run("walk")
            self.assertIn(f"walk {outcome}", result.stdout + result.stderr)
            for name in ("pid", "stubborn"):
                pid = int((f.dir / name).read_text())
                self.assertFalse(running(pid), f"{outcome}: {name} {pid} still runs")

    def test_a_walkthrough_past_its_time_is_stopped_and_fails(self):
        f = self.fixture("""\
            <!-- doctest walk -->
            ```sh
            echo started
            sleep 120
            ```
            """)
        started = time.monotonic()
        result = f.run("--timeout", "2", "walk")
        self.assertLess(time.monotonic() - started, 60)
        self.assertEqual(result.returncode, 1)
        self.assertIn("timed out after 2 s (--timeout) in the block at README.md:3",
                      result.stderr)
        self.assertIn("started", result.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
