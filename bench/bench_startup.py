"""Benchmark: command-line and import start-up against a bare interpreter start.

Candidates, each a fresh subprocess of the same interpreter, run interleaved (A B C A B C …)
so that a busy machine slows them alike and the ratios survive:
  bare    `python -c pass`
  import  `python -c "import refusals"`
  help    `refusals --help` (the installed entry point, or `python -m refusals` without one)
  click   the same help rendered by click (`main.main()`): the start-up every other command
          line pays before its command's own imports; no target, shown for comparison
Targets (issue 14): import at most 3x bare, help at most 4x bare, medians in one run.

Byte-code is cached in a private directory (`PYTHONPYCACHEPREFIX`) and warmed first, as an
installed package has its `.pyc` files: compiling the sources on every run would measure
the compiler, not the start-up.

Run: python bench/bench_startup.py [--repeats N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGETS = {"import": 3.0, "help": 4.0}
CLICK_HELP = (
    "import sys; sys.argv = ['refusals', '--help']; from refusals.cli import main; main.main()"
)


def candidates() -> dict[str, list[str]]:
    script = Path(sys.executable).with_name("refusals")
    help_cmd = [str(script), "--help"] if script.exists() else [sys.executable, "-m", "refusals"]
    if not script.exists():
        help_cmd.append("--help")
    return {
        "bare": [sys.executable, "-c", "pass"],
        "import": [sys.executable, "-c", "import refusals"],
        "help": help_cmd,
        "click": [sys.executable, "-c", CLICK_HELP],
    }


def run_once(argv: list[str], env: dict[str, str]) -> float:
    # A blocking wait: `subprocess.run(timeout=...)` polls with sleeps, which rounds every
    # figure up to its polling step.
    start = time.perf_counter()
    child = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL)
    _, status, _ = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"{argv!r} failed with exit code {child.returncode}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30, help="runs of each candidate")
    args = parser.parse_args()

    cmds = candidates()
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryDirectory(prefix="refusals-bench-pyc-") as cache:
        env["PYTHONPYCACHEPREFIX"] = cache
        for argv in cmds.values():
            run_once(argv, env)  # warm the byte-code cache and the file system
        samples: dict[str, list[float]] = {name: [] for name in cmds}
        for _ in range(args.repeats):
            for name, argv in cmds.items():
                samples[name].append(run_once(argv, env))

    print(f"{sys.version.split()[0]}, {args.repeats} interleaved runs each")
    print(f"{'candidate':<8} {'min ms':>8} {'median ms':>10} {'max ms':>8} {'x bare':>8}")
    bare = statistics.median(samples["bare"])
    met_all = True
    for name, values in samples.items():
        median = statistics.median(values)
        print(
            f"{name:<8} {min(values) * 1e3:8.1f} {median * 1e3:10.1f} "
            f"{max(values) * 1e3:8.1f} {median / bare:7.2f}x"
        )
    for name, target in TARGETS.items():
        ratio = statistics.median(samples[name]) / bare
        met = ratio <= target
        met_all = met_all and met
        verdict = "met" if met else "NOT met"
        print(f"target {name} <= {target:.0f}x bare: {ratio:.2f}x, {verdict}")
    return 0 if met_all else 1


if __name__ == "__main__":
    sys.exit(main())
