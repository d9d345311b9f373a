"""Whole-process start-up: ``lorescan replay`` on the bundled sample against importing lorescan's
dependencies, as separate processes, medians of several runs (wall clock and CPU time)::

    python benchmarks/startup.py                       # this checkout, 11 runs each
    python benchmarks/startup.py --root ../old-tree    # another checkout (with its own .venv)

Bytecode is cached under a directory of its own per checkout (``PYTHONPYCACHEPREFIX``), as an
installed package has it, whatever ``PYTHONDONTWRITEBYTECODE`` says; the first run of each command
warms it and is not counted. CPU time (user + system) moves less than wall time on a busy machine.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEPS = "import regex, ahocorasick, yaml; from pydantic import BaseModel"


def measure(cmd: list[str], cwd: str, env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run of ``cmd``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--root", default=str(HERE.parent), help="the checkout measured (its .venv runs it)")
    p.add_argument("--runs", type=int, default=11)
    args = p.parse_args()
    root = str(Path(args.root).resolve())
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / ("lorescan-pyc" + root.replace(os.sep, "_")))
    bin_dir = Path(root) / ".venv" / "bin"
    commands = {
        "dependencies": [str(bin_dir / "python"), "-c", DEPS],
        "replay": [str(bin_dir / "lorescan"), "replay", "--book", "corpora/saltmere.json",
                   "--chat", "corpora/saltmere-chat.jsonl"],
    }
    runs: dict[str, list[tuple[float, float]]] = {k: [] for k in commands}
    for i in range(args.runs + 1):
        for name, cmd in commands.items():
            got = measure(cmd, root, env)
            if i:
                runs[name].append(got)
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in runs.items()}
    for name, (wall, cpu) in med.items():
        print(f"{name:13} wall {wall * 1000:7.1f} ms   cpu {cpu * 1000:7.1f} ms")
    print(f"{'ratio':13} wall {med['replay'][0] / med['dependencies'][0]:7.2f}      "
          f"cpu {med['replay'][1] / med['dependencies'][1]:7.2f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
