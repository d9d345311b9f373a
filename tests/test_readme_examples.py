"""The README's command-line examples run as shown from a fresh copy of the repository.

Each ```console block's ``$ lorescan ...`` lines run, in order, in a copy of the tracked files
placed where no ``../shared`` exists; what the README shows of the output must be what they print
(a ``...`` line stands for lines left out). Any other ```bash block outside the first (the install
and test commands) runs too. A command exits 0 unless its line ends with ``# exits N``.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def _examples() -> list[tuple[str, list[str]]]:
    """(command, the output lines the README shows) for every example, in README order."""
    out: list[tuple[str, list[str]]] = []
    for n, match in enumerate(FENCE.finditer(README)):
        lang, body = match.group(1), match.group(2)
        if n == 0 or lang not in ("console", "bash"):
            continue               # the first block is the install and test commands
        for line in body.splitlines():
            if lang == "bash" and line.strip() and not line.startswith("#"):
                out.append((line, []))
            elif lang == "console" and line.startswith("$ "):
                out.append((line[2:], []))
            elif lang == "console" and out:
                out[-1][1].append(line.rstrip())
    return [(cmd, shown) for cmd, shown in out if "pip install" not in cmd]


def _fresh_copy(dest: Path) -> Path:
    """The tracked files of the repository (every file, when git is not there) under ``dest``."""
    repo = dest / "clone" / "lorescan"
    try:
        listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=True)
        files = [f for f in listed.stdout.decode().split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = []
    if files:
        for name in files:
            if (ROOT / name).is_file():
                (repo / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / name, repo / name)
    else:
        shutil.copytree(ROOT, repo, ignore=shutil.ignore_patterns(".venv", ".git", "__pycache__", "*.egg-info"))
    return repo


def _shown_in(shown: list[str], printed: list[str]) -> bool:
    """Whether the shown lines appear in the printed ones, in order, each run between ``...`` lines
    contiguous."""
    runs: list[list[str]] = [[]]
    for line in shown:
        if line.strip() == "...":
            runs.append([])
        else:
            runs[-1].append(line)
    at = 0
    for run in (r for r in runs if r):
        while at + len(run) <= len(printed) and printed[at:at + len(run)] != run:
            at += 1
        if at + len(run) > len(printed):
            return False
        at += len(run)
    return True


def test_readme_opens_with_one_sentence_then_the_two_commands() -> None:
    lines = README.splitlines()
    assert lines[0] == "# lorescan"
    assert lines[2].startswith("lorescan is ") and lines[2].endswith(".") and lines[2].count(". ") == 0
    first = FENCE.search(README)
    assert first is not None and first.group(1) == "bash"
    commands = first.group(2).splitlines()
    assert len(commands) == 2 and commands[1] == ".venv/bin/python -m pytest"
    assert commands[0].endswith(".venv/bin/lorescan replay --book corpora/saltmere.json "
                                "--chat corpora/saltmere-chat.jsonl")


def test_readme_examples_run_from_a_fresh_copy(tmp_path: Path) -> None:
    pytest.importorskip("yaml")              # `lorescan test` reads a YAML case file
    examples = _examples()
    assert len(examples) >= 10 and not any("../shared" in cmd for cmd, _ in examples)
    repo = _fresh_copy(tmp_path)
    assert not (repo.parent / "shared").exists() and not (repo.parent.parent / "shared").exists()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LORESCAN")}
    env.update(COLUMNS="100", PYTHONPATH=str(repo))
    for cmd, shown in examples:
        words = shlex.split(cmd, comments=True)
        assert words[0] == "lorescan", cmd
        expected = re.search(r"# exits (\d+)", cmd)
        done = subprocess.run([sys.executable, "-m", "lorescan", *words[1:]], cwd=repo, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == (int(expected.group(1)) if expected else 0), (cmd, done.stderr)
        printed = [line.rstrip() for line in done.stdout.splitlines()]
        assert _shown_in(shown, printed), (cmd, "\n".join(printed))
    assert (repo / "copy.json").read_bytes() == (ROOT / "corpora" / "saltmere.json").read_bytes()
