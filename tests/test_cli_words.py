"""What the commands print, pinned through the command line in a subprocess: explanations in plain
words with one message numbering, transcripts whose roles ``--user``/``--char`` decide, piped
tables that fit their width, ``--version``, honest help and success messages."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import lorescan
from lorescan._cli.main import main

from .conftest import ROOT

BOOK = str(ROOT / "corpora" / "saltmere.json")
CHAT = str(ROOT / "corpora" / "saltmere-chat.jsonl")
SETTINGS = str(ROOT / "corpora" / "saltmere-settings.json")
NUMBERING = "(messages are numbered from #1, the first message of the chat)"


def _run(*args: str, columns: str | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = columns
    return subprocess.run([sys.executable, "-m", "lorescan", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=300)


def _no_python_reprs(text: str) -> None:
    for repr_mark in ("{'", "['", "None", "True,", "False,"):
        assert repr_mark not in text, (repr_mark, text)


# ------------------------------------------------------------------------------ explain

def test_explain_says_where_a_recursed_key_matched() -> None:
    """The issue's command: the match was in recursed entry text, and the output says so."""
    done = _run("explain", "--book", BOOK, "--chat", CHAT, "--settings", SETTINGS, "--entry", "saltmere.5",
                "--at", "3")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines == [
        f"saltmere.5 at generation 3, before message #7 {NUMBERING}",
        "activated in pass 2: primary key 'smuggler' matched in the content of saltmere.2, recursed after pass 1",
        "  - primary key 'smuggler' matched in the content of saltmere.2, recursed after pass 1",
        "  - primary key 'smuggling' does not occur in the text pass 2 scanned (messages #3 to #6 and the "
        "contents recursed after pass 1)",
        "  · pass 1 (the chat): not a candidate: no primary key matched",
        "  · pass 2 (recursion): a candidate: primary key 'smuggler' matched in the content of saltmere.2, "
        "recursed after pass 1",
        "  · pass 2 (recursion): fits the budget: 150 of 512 tokens used after it",
        "  · pass 2 (recursion): activated",
    ]
    _no_python_reprs(done.stdout)


def test_explain_json_keeps_the_structure_and_says_where() -> None:
    done = _run("explain", "--book", BOOK, "--chat", CHAT, "--settings", SETTINGS, "--entry", "saltmere.5",
                "--at", "3", "--json")
    exp = json.loads(done.stdout)
    assert (exp["generation"], exp["message"], exp["activated"]) == (3, 7, True)
    assert exp["numbering"] == NUMBERING[1:-1]
    hit = exp["matches"][0]
    assert {k: hit[k] for k in ("key", "piece", "source", "scan_pass", "where", "counts")} == {
        "key": "smuggler", "piece": "recursion", "source": "saltmere.2", "scan_pass": 2,
        "where": "the content of saltmere.2, recursed after pass 1", "counts": True}
    budget = next(e for e in exp["events"] if e["event"] == "budget")
    assert (budget["outcome"], budget["budget"], budget["before"] + budget["pass_tokens"]) == ("fits", 512, 150)


def test_no_python_reprs_in_any_explanation(capsys) -> None:
    """Every entry at every generation, both settings: words only, and never a contradiction
    between the verdict and the key lines."""
    for settings in ([], ["--settings", SETTINGS]):
        for entry in range(12):
            for at in range(1, 7):
                assert main(["explain", "--book", BOOK, "--chat", CHAT, *settings, "--entry", str(entry),
                             "--at", str(at)]) == 0
                out = capsys.readouterr().out
                _no_python_reprs(out)
                verdict, keys = out.splitlines()[1], out.splitlines()[2:]
                if " matched in " in verdict and "key '" in verdict:
                    key = verdict.split("key '", 1)[1].split("'", 1)[0]
                    line = next(k for k in keys if k.startswith(f"  - primary key '{key}'"))
                    assert " matched" in line and "does not occur" not in line, out


def test_one_message_numbering_in_replay_explain_and_scan() -> None:
    replay = _run("replay", "--book", BOOK, "--chat", CHAT)
    rows = [line.split() for line in replay.stdout.splitlines() if re.match(r"\d+ +\d+ ", line)]
    assert [(r[0], r[1]) for r in rows] == [("1", "3"), ("2", "5"), ("3", "7"), ("4", "9"), ("5", "11"),
                                             ("6", "13")]
    assert "msg: the message each generation wrote " + NUMBERING + "." in " ".join(replay.stdout.split())
    as_json = [json.loads(line) for line in _run("replay", "--book", BOOK, "--chat", CHAT, "--json").stdout.splitlines()]
    assert [(g["generation"], g["message"]) for g in as_json] == [(1, 3), (2, 5), (3, 7), (4, 9), (5, 11), (6, 13)]
    # generation 6 wrote message #13 (Ines); the key it found is in message #11, counted the same way
    explain = _run("explain", "--book", BOOK, "--chat", CHAT, "--entry", "saltmere.10", "--at", "6")
    assert explain.stdout.splitlines()[:3] == [
        f"saltmere.10 at generation 6, before message #13 {NUMBERING}",
        "activated in pass 1: primary key 'cat' matched in message #11 (Ines)",
        "  - primary key 'cat' matched in message #11 (Ines)"]
    chat = [json.loads(line) for line in Path(CHAT).read_text(encoding="utf-8").splitlines()][1:]
    assert chat[11 - 1]["name"] == "Ines" and "cat" in chat[11 - 1]["mes"]
    scan = _run("scan", "--book", BOOK, "--text", "Follow the cat to the keeper.")
    assert scan.stdout.splitlines() == [
        "Follow the [cat] to the [keeper].", "",
        "saltmere.0: activated in pass 1: constant (always active)",
        "saltmere.2: activated in pass 1: primary key 'keeper' matched in the text",
        "saltmere.10: activated in pass 1: primary key 'cat' matched in the text"]


def test_a_failing_case_is_explained_in_words(tmp_path: Path) -> None:
    cases = tmp_path / "cases.json"
    cases.write_text(json.dumps({"books": [BOOK], "user": "Rowan", "char": "Ines", "cases": [
        {"name": "ghosts", "chat": [{"name": "Rowan", "is_user": True, "mes": "Tell me about the ships."}],
         "expect": {"activated": ["saltmere.4"]}}]}))
    done = _run("test", str(cases))
    assert done.returncode == 1
    assert done.stdout.splitlines()[:3] == [
        "FAIL  ghosts",
        "      expected saltmere.4 to be activated; activated: saltmere.0",
        "      saltmere.4: not activated: primary key 'ship' matched in message #1 (Rowan), but the secondary "
        "keys failed (AND ANY: none of them matched)"]
    _no_python_reprs(done.stdout)


# ------------------------------------------------------------------------------ transcripts

TRANSCRIPT = """Seraphina: Welcome, traveler. The glade is safe.
Traveler: Where am I? What is this glade?
Seraphina: You are in my glade, deep in the forest.
Traveler: Tell me about the forest.
Seraphina: The forest is old.
Traveler: Are there wolves?
Seraphina: The wolves fear my glade.
"""
GLADE = {"entries": {"0": {"uid": 0, "key": ["glade"], "content": "The glade is warded."}}}


@pytest.fixture
def transcript(tmp_path: Path) -> tuple[str, str]:
    chat, book = tmp_path / "seraphina.txt", tmp_path / "glade.json"
    chat.write_text(TRANSCRIPT, encoding="utf-8")
    book.write_text(json.dumps(GLADE), encoding="utf-8")
    return str(book), str(chat)


def _messages(done: subprocess.CompletedProcess) -> list[int]:
    assert done.returncode == 0, done.stderr
    return [json.loads(line)["message"] for line in done.stdout.splitlines()]


def test_transcript_roles_follow_user_and_char(transcript: tuple[str, str]) -> None:
    book, chat = transcript
    # guessed: the first speaker is taken as the user, and replay says so
    guessed = _run("replay", "--book", book, "--chat", chat, "--json")
    assert _messages(guessed) == [2, 4, 6]
    assert guessed.stderr.splitlines() == [
        f"lorescan: warning: {chat}: took 'Seraphina' (the first speaker) as the user; add '# user: Name' "
        "to choose (or pass --user NAME or --char NAME)"]
    # --user and --char decide: generations come before Seraphina's messages #3, #5 and #7
    decided = _run("replay", "--book", book, "--chat", chat, "--json", "--user", "Traveler", "--char", "Seraphina")
    assert _messages(decided) == [3, 5, 7] and decided.stderr == ""
    explained = _run("explain", "--book", book, "--chat", chat, "--entry", "glade.0", "--at", "1",
                     "--user", "Traveler")
    assert explained.stdout.splitlines()[:2] == [
        f"glade.0 at generation 1, before message #3 {NUMBERING}",
        "activated in pass 1: primary key 'glade' matched in message #2 (Traveler)"]


def test_either_name_decides_and_a_stranger_is_reported(transcript: tuple[str, str], capsys) -> None:
    book, chat = transcript
    for names in (["--user", "Traveler"], ["--char", "Seraphina"], ["--user", "traveler"]):
        assert main(["replay", "--book", book, "--chat", chat, "--json", *names]) == 0
        out = capsys.readouterr()
        assert [json.loads(line)["message"] for line in out.out.splitlines()] == [3, 5, 7], names
        assert out.err == ""
    # a name that does not speak decides nothing, and says so
    assert main(["replay", "--book", book, "--chat", chat, "--json", "--user", "Bob"]) == 0
    out = capsys.readouterr()
    assert [json.loads(line)["message"] for line in out.out.splitlines()] == [2, 4, 6]
    assert "--user 'Bob' does not speak in this chat (speakers: Seraphina, Traveler)" in out.err
    assert "took 'Seraphina' (the first speaker) as the user" in out.err
    assert main(["replay", "--book", book, "--chat", chat, "--user", "Traveler", "--char", "traveler"]) == 2
    assert "both name the speaker 'Traveler'" in capsys.readouterr().err


def test_tavernai_chat_roles_follow_user(tmp_path: Path) -> None:
    chat = tmp_path / "old.json"
    chat.write_text(json.dumps(["Traveler: Is this the glade?", "Seraphina: It is my glade.",
                                "Traveler: Good.", "Seraphina: Rest in the glade."]))
    book = tmp_path / "glade.json"
    book.write_text(json.dumps(GLADE))
    guessed = _run("replay", "--book", str(book), "--chat", str(chat), "--json")
    assert _messages(guessed) == [3]        # Traveler spoke first, so Traveler was taken as the character
    assert "the first speaker is taken as the character" in guessed.stderr
    decided = _run("replay", "--book", str(book), "--chat", str(chat), "--json", "--user", "Traveler")
    assert _messages(decided) == [2, 4] and decided.stderr == ""


# ------------------------------------------------------------------------------ tables and messages

def _table(text: str, width: int, row_start: str) -> tuple[list[tuple[int, int]], list[str]]:
    """The column spans the rule line draws and the body's lines (a row starts with ``row_start``,
    its wrapped lines with spaces), after checking every line of the output fits ``width`` and
    every character of the body sits inside a column."""
    lines = text.splitlines()
    assert all(len(line) <= width for line in lines), max(lines, key=len)
    rule = next(i for i, line in enumerate(lines) if line.startswith("---"))
    spans, at = [], 0
    for dashes in lines[rule].split("  "):
        spans.append((at, at + len(dashes)))
        at += len(dashes) + 2
    body = []
    for line in lines[rule + 1:]:
        if not (line.startswith(" ") or re.match(row_start, line)):
            break
        body.append(line)
    assert body
    for line in [lines[rule - 1]] + body:
        for i, ch in enumerate(line):
            if ch != " ":
                assert any(a <= i < b for a, b in spans), (line, i)
    return spans, body


def _cells(spans: list[tuple[int, int]], body: list[str], column: int) -> list[str]:
    """One column's text, row by row, spaces left out (wrapping puts them at line ends)."""
    rows: list[list[str]] = []
    for line in body:
        if not line.startswith(" "):
            rows.append([])
        rows[-1].append(line[spans[column][0]:spans[column][1]])
    return ["".join(parts).replace(" ", "") for parts in rows]


def test_piped_tables_wrap_within_columns() -> None:
    done = _run("lint", BOOK, columns="80")
    spans, body = _table(done.stdout, 80, r"(info|warning|error) ")
    findings = json.loads(_run("lint", BOOK, "--json").stdout)
    assert _cells(spans, body, 4) == [f["message"].replace(" ", "") for f in findings]
    assert _cells(spans, body, 1) == [f"{f['book']}.{f['uid']}" for f in findings]
    assert done.stdout.splitlines()[-1] == "0 error(s), 2 warning(s), 2 info."
    replay = _run("replay", "--book", BOOK, "--chat", CHAT, "--settings", SETTINGS, columns="80")
    spans, body = _table(replay.stdout, 80, r"\d+ +\d+ ")
    gens = [json.loads(line) for line in
            _run("replay", "--book", BOOK, "--chat", CHAT, "--settings", SETTINGS, "--json").stdout.splitlines()]
    assert _cells(spans, body, 3) == [",".join(g["new"]) or "-" for g in gens]
    assert _cells(spans, body, 1) == [str(g["message"]) for g in gens]
    # without COLUMNS and without a terminal: 100 characters
    _table(_run("replay", "--book", BOOK, "--chat", CHAT, "--settings", SETTINGS).stdout, 100, r"\d+ +\d+ ")


def test_version() -> None:
    done = _run("--version")
    assert (done.returncode, done.stdout) == (0, f"lorescan {lorescan.__version__}\n")


def test_scan_help_does_not_promise_a_chat_file() -> None:
    text = " ".join(_run("scan", "--help", columns="200").stdout.split())
    assert "from the chat file" not in text
    assert "--user USER_NAME the user's name, for {{user}} in keys (default: User)" in text


def test_convert_and_report_say_what_they_wrote(tmp_path: Path) -> None:
    done = _run("convert", BOOK, "-o", "copy.json", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, "wrote copy.json (st): book saltmere, 12 entries\n")
    assert (tmp_path / "copy.json").read_bytes() == Path(BOOK).read_bytes()
    done = _run("convert", CHAT, "-o", "chat.txt", "--to", "transcript", cwd=tmp_path)
    assert done.stdout == "wrote chat.txt (transcript): 13 messages\n"
    done = _run("report", "--book", BOOK, "--chat", CHAT, "-o", "report.html", cwd=tmp_path)
    assert done.stdout.startswith("wrote report.html: 6 generations, ")
