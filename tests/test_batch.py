"""Batch replay (``replay --chats``): counts per entry, book and chat; JSON, CSV and terminal
output; many-chat files; malformed chats and ``--strict``; ``--diff``; the process pool (also with
a worker killed mid-run); the counting itself (merge, budget bins, per-chat seeds)."""

from __future__ import annotations

import csv
import io
import json
import multiprocessing
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from lorescan._batch import BatchSpec, chat_seed, local, report, run_batch, tasks
from lorescan._batch import aggregate as ag
from lorescan._batch.sources import expand, is_many_chats
from lorescan._cli.main import main
from lorescan._errors import LorescanError
from lorescan._model import Settings

from .batch_helpers import ENTRIES, SETTINGS, cli_args, conversation, st_chat, write_set

#: per entry: fired generations, fired chats, budget cut, blocked (cooldown, delay, group, probability)
#: over the five good chats (each: 4 generations; see batch_helpers.LINES)
WANT = {
    "lore.0": (5, 5, 0, (0, 0, 0, 0)),     # "dragon" at the first generation
    "lore.1": (0, 0, 0, (0, 0, 0, 5)),     # probability 0
    "lore.2": (0, 0, 0, (0, 0, 0, 0)),     # never mentioned
    "lore.3": (5, 5, 0, (5, 0, 0, 0)),     # tea, then tea again within its cooldown of 3
    "lore.4": (0, 0, 0, (0, 5, 0, 0)),     # "castle" at 6 messages, delay 7
    "lore.5": (5, 5, 0, (0, 0, 0, 0)),     # wins its group (override)
    "lore.6": (0, 0, 0, (0, 0, 5, 0)),     # loses it
    "lore.7": (0, 0, 5, (0, 0, 0, 0)),     # 100 tokens: over the 50-token budget
}


def _run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    rc = main(args)
    out = capsys.readouterr()
    return rc, out.out, out.err


def _json(paths: dict[str, Path], capsys: pytest.CaptureFixture[str], *extra: str) -> dict:
    rc, out, _ = _run_cli(cli_args(paths, "--json", *extra), capsys)
    assert rc == 0
    return json.loads(out)


def test_json_report_counts_every_entry(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = write_set(tmp_path)
    r = _json(paths, capsys, "--jobs", "1")
    assert (r["chats"], r["generations"], r["overflows"]) == (5, 20, 5)
    broken = str(paths["chats"] / "broken.jsonl")
    assert r["failures"] == [{"path": broken, "error": "line 2: field 'mes': Input should be a valid string"}]
    got = {e["key"]: (e["fired_generations"], e["fired_chats"], e["budget_cut"],
                      tuple(e["blocked"][k] for k in ("cooldown", "delay", "group", "probability")))
           for e in r["entries"]}
    assert got == WANT
    by_key = {e["key"]: e for e in r["entries"]}
    assert [e["key"] for e in r["entries"]] == [f"lore.{e['uid']}" for e in ENTRIES]     # book order
    assert r["never_fired"] == ["lore.1", "lore.2", "lore.4", "lore.6", "lore.7"]
    assert by_key["lore.2"]["never_fired"] and not by_key["lore.0"]["never_fired"]
    assert by_key["lore.0"]["fire_rate"] == 0.25 and by_key["lore.0"]["chat_rate"] == 1.0
    assert by_key["lore.0"]["first_fired"] == {"mean_generation": 1.0, "min_generation": 1}
    assert by_key["lore.3"]["first_fired"] == {"mean_generation": 2.0, "min_generation": 2}
    assert by_key["lore.2"]["first_fired"] is None
    # chars4 tokens: "Dragons hoard gold." 19 characters = 5 tokens, five times
    assert by_key["lore.0"]["tokens"] == 25 and by_key["lore.5"]["tokens"] == 10
    assert by_key["lore.0"]["comment"] == "Dragon" and by_key["lore.0"]["book"] == "lore"
    assert [(c["path"].rsplit("/", 1)[1], c["generations"], c["overflows"], c["activations"]) for c in r["per_chat"]] == [
        ("chat0.jsonl", 4, 1, 3), ("chat1.jsonl", 4, 1, 3), ("chat2.jsonl", 4, 1, 3),
        ("many.jsonl:1", 4, 1, 3), ("many.jsonl:2", 4, 1, 3)]
    hist = [h["generations"] for h in r["budget"]["histogram"]]
    assert len(hist) == 21 and hist[-1] == 5 and sum(hist) == 20
    book = r["books"][0]
    assert (book["name"], book["entries"], book["fired"], book["never_fired"], book["tokens"]) == ("lore", 8, 3, 5, 40)
    assert [t["key"] for t in book["top_consumers"]] == ["lore.0", "lore.5", "lore.3"]
    # chars4 tokens of 50: 5 at generation 1 (10 %), 3 at generation 2 (6 %), none at 3 and 4
    assert book["budget_histogram"] == [10, 5, 5] + [0] * 18 and book["budget_share"] == 0.04    # 40 tokens of 20 x 50
    assert r["overflow_rate"] == 0.25 and r["seed"] == 0


def test_process_pool_gives_the_same_report_as_one_process(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    paths = write_set(tmp_path)
    (paths["book"]).write_text(json.dumps({"entries": {
        **{str(e["uid"]): e for e in ENTRIES},
        "8": {"uid": 8, "key": ["sure", "here", "yes"], "content": "Coin.", "probability": 50, "useProbability": True},
    }}), encoding="utf-8")
    one = _json(paths, capsys, "--jobs", "1", "--seed", "11")
    two = _json(paths, capsys, "--jobs", "2", "--seed", "11")
    assert one == two
    coin = next(e for e in one["entries"] if e["key"] == "lore.8")
    assert 0 < coin["fired_generations"] < 20      # the rolls happened, and differ by chat


def test_seed_gives_each_chat_its_own_random_source() -> None:
    assert chat_seed(0, "a.jsonl") == chat_seed(0, "a.jsonl")
    assert len({chat_seed(0, "a.jsonl"), chat_seed(1, "a.jsonl"), chat_seed(0, "b.jsonl")}) == 3
    assert chat_seed(7, "chats/x.jsonl:3") == int.from_bytes(
        __import__("hashlib").sha256(b"7\0chats/x.jsonl:3").digest()[:8], "big")


def test_malformed_chats_are_listed_and_strict_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = write_set(tmp_path, copies=1, many=0)
    (paths["chats"] / "empty.txt").write_text("", encoding="utf-8")
    (paths["chats"] / "lines.jsonl").write_text(conversation() + "\n{oops\n", encoding="utf-8")
    rc, out, err = _run_cli(cli_args(paths, "--json", "--jobs", "1"), capsys)
    assert rc == 0 and "Traceback" not in err
    r = json.loads(out)                     # stdout holds the JSON report only
    assert r["chats"] == 2 and r["generations"] == 8
    fails = {f["path"].rsplit("/", 1)[1]: f["error"] for f in r["failures"]}
    assert set(fails) == {"broken.jsonl", "empty.txt", "lines.jsonl:2"}
    assert fails["empty.txt"] == "file is empty"
    assert "\n" not in "".join(fails.values())
    rc, out, _ = _run_cli(cli_args(paths, "--json", "--jobs", "1", "--strict"), capsys)
    assert rc == 1 and json.loads(out)["failures"]
    (paths["chats"] / "broken.jsonl").unlink()
    (paths["chats"] / "empty.txt").unlink()
    (paths["chats"] / "lines.jsonl").unlink()
    rc, _, _ = _run_cli(cli_args(paths, "--json", "--jobs", "1", "--strict"), capsys)
    assert rc == 0


def test_terminal_table_and_progress_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = write_set(tmp_path)
    args = [a for a in cli_args(paths, "--jobs", "1") if a != "--no-progress"]
    rc, out, err = _run_cli(args, capsys)
    assert rc == 0
    assert out.startswith("Replayed 5 chats (20 generations) against 8 entries in 1 book, SillyTavern 1.18")
    flat = " ".join(out.split())
    assert "lore.0 (Dragon)" in out and "Never fired (5 of 8): lore.1, lore.2, lore.4, lore.6, lore.7" in flat
    assert "broken.jsonl: line 2: field 'mes'" in out
    assert err.startswith("lorescan: 5/5 tasks, 5 chats, 20 generations") and "1 failed" in err


def test_progress_plain_lines_and_bar() -> None:
    from lorescan._batch.progress import Progress

    agg = ag.Aggregate(chats=2, generations=8)
    agg.fail("x.jsonl", "bad")
    plain = io.StringIO()
    p = Progress(3, plain, bar=False, every=0.0)
    p.done([0], agg)
    p.done([1, 2], ag.Aggregate(chats=1, generations=4))     # a run of two tasks, one aggregate
    p.close()
    lines = plain.getvalue().splitlines()
    assert len(lines) == 3 and lines[0].startswith("lorescan: 1/3 tasks, 2 chats, 8 generations, ")
    assert "1 failed" in lines[0] and "ETA" in lines[0]
    assert lines[-1].startswith("lorescan: 3/3 tasks, 3 chats, 12 generations, ") and "ETA" not in lines[-1]
    quiet = io.StringIO()
    q = Progress(1, quiet, enabled=False, every=0.0)
    q.done([0], agg)
    q.close()
    assert quiet.getvalue() == ""
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    shown = Terminal()                     # on a terminal: rich's bar, no plain lines
    b = Progress(2, shown)
    b.done([0], agg)
    b.close()
    assert "replaying" in shown.getvalue() and "1/2" in shown.getvalue() and "lorescan:" not in shown.getvalue()


def test_csv_has_one_row_per_entry(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = write_set(tmp_path)
    rc, out, _ = _run_cli(cli_args(paths, "--csv", "--jobs", "1"), capsys)
    assert rc == 0
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0] == list(ag.CSV_FIELDS)
    assert [r[0] for r in rows[1:]] == [f"lore.{i}" for i in range(8)]
    seven = dict(zip(rows[0], rows[8]))
    assert (seven["budget_cut"], seven["never_fired"], seven["fired_generations"]) == ("5", "1", "0")
    six = dict(zip(rows[0], rows[7]))
    assert six["blocked_group"] == "5" and six["comment"] == "Sword alt"
    target = tmp_path / "out.csv"
    rc, out, _ = _run_cli(cli_args(paths, "--csv", str(target), "--json", "--jobs", "1"), capsys)
    assert rc == 0 and json.loads(out)["chats"] == 5
    assert target.read_text(encoding="utf-8").splitlines()[1:] == [",".join(r) for r in rows[1:]]


def test_diff_reports_entries_gained_lost_and_changed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = write_set(tmp_path, bad=False)
    edited = [dict(e) for e in ENTRIES]
    edited[0]["key"] = ["wyvern"]                          # lore.0 no longer fires: lost at generation 1
    edited[5]["content"] = "A sharper sword."              # lore.5 fires with another text: changed
    edited.append({"uid": 9, "key": ["tea"], "content": "Tea leaves."})   # new, no cooldown: gained at 2 and 3
    other = tmp_path / "lore-v2.json"                      # another file name: keys still read lore.*
    other.write_text(json.dumps({"entries": {str(e["uid"]): e for e in edited}}), encoding="utf-8")
    r = _json(paths, capsys, "--jobs", "2", "--diff", str(other))
    d = r["diff"]
    assert (d["generations"], d["changed_generations"], d["text_changed_generations"]) == (20, 15, 15)
    assert d["entries"] == [
        {"key": "lore.9", "comment": "", "gained": 10, "lost": 0, "text_changed": 0},
        {"key": "lore.0", "comment": "Dragon", "gained": 0, "lost": 5, "text_changed": 0},
        {"key": "lore.5", "comment": "Sword", "gained": 0, "lost": 0, "text_changed": 5},
    ]
    assert d["changed_rate"] == 0.75
    assert [e["key"] for e in r["entries"]] == [f"lore.{i}" for i in range(8)]   # the original's entries
    rc, out, _ = _run_cli(cli_args(paths, "--jobs", "1", "--diff", str(other)), capsys)
    assert rc == 0 and "15 of 20 generations change (75.0%), 15 of them in bucket text" in " ".join(out.split())
    rc, out, _ = _run_cli(cli_args(paths, "--csv", "--jobs", "1", "--diff", str(other)), capsys)
    row = next(r for r in csv.DictReader(io.StringIO(out)) if r["key"] == "lore.0")
    assert (row["diff_lost"], row["diff_gained"]) == ("5", "0")


def test_many_chat_files_and_discovery(tmp_path: Path) -> None:
    many = tmp_path / "many.jsonl"
    many.write_text("\n".join(conversation() for _ in range(70)) + "\n\n", encoding="utf-8")
    st = tmp_path / "one.jsonl"
    st.write_text(st_chat(), encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "two.txt").write_text("Bo: Hi.\nUser: A dragon.\nBo: Yes.\n", encoding="utf-8")
    (tmp_path / "sub" / ".hidden.jsonl").write_text("x", encoding="utf-8")
    (tmp_path / "sub" / "card.png").write_bytes(b"\x89PNG")
    assert is_many_chats(str(many)) and not is_many_chats(str(st))
    assert expand([str(tmp_path)]) == [str(many), str(st), str(tmp_path / "sub" / "two.txt")]
    assert expand([str(tmp_path / "*.jsonl"), str(st)]) == [str(many), str(st)]
    assert expand([str(tmp_path / "**" / "*.txt")]) == [str(tmp_path / "sub" / "two.txt")]
    ts = tasks([str(many)])
    assert [(t.line, t.end > t.start) for t in ts] == [(1, True), (33, True), (65, True)]
    with pytest.raises(LorescanError, match="no such file"):
        expand([str(tmp_path / "missing.jsonl")])
    with pytest.raises(LorescanError, match="matches no file"):
        expand([str(tmp_path / "*.yaml")])
    spec = BatchSpec(books=(("lore.json", json.dumps({"entries": {"0": ENTRIES[0]}}).encode()),),
                     settings=Settings(**SETTINGS), tokenizer="chars4")
    agg = run_batch(spec, tasks([str(tmp_path)]), jobs=1)
    assert agg.chats == 72 and not agg.failures
    assert sorted(c.path for c in agg.chat_rows)[:2] == [f"{many}:1", f"{many}:10"]
    assert agg.entries["lore.0"][ag.FIRED] == 72       # one generation with "dragon" in each


def test_batch_flags_need_chats_and_single_replay_is_unchanged(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    paths = write_set(tmp_path)
    chat = str(paths["chats"] / "chat0.jsonl")
    rc, out, _ = _run_cli(["replay", "--book", str(paths["book"]), "--chat", chat, "--json"], capsys)
    assert rc == 0 and len(out.splitlines()) == 4 and json.loads(out.splitlines()[0])["generation"] == 1
    rc, _, err = _run_cli(["replay", "--book", str(paths["book"]), "--chat", chat, "--jobs", "2"], capsys)
    assert rc == 2 and "--jobs is for --chats" in err
    rc, _, err = _run_cli(["replay", "--book", str(paths["book"])], capsys)
    assert rc == 2 and "a chat is required" in err
    rc, _, err = _run_cli(cli_args(paths, "--json", "--csv"), capsys)
    assert rc == 2 and "--json and --csv both write to stdout" in err
    rc, _, err = _run_cli(["replay", "--book", str(paths["book"]), "--chats", str(tmp_path / "nope")], capsys)
    assert rc == 2 and err.strip().endswith("nope: no such file or directory")


def test_a_tally_changes_no_result_and_names_what_was_held_back() -> None:
    import random

    from lorescan import ChatMessage, Lorebook, compile
    from lorescan._replay import Session, generation_points
    from lorescan._results import result_json
    from lorescan._tally import Tally

    from .batch_helpers import LINES

    lore = compile([Lorebook.from_entries("lore", ENTRIES)], tokenizer="chars4")
    messages = [ChatMessage(name="Ann" if i % 2 else "Bo", is_user=bool(i % 2), mes=t) for i, t in enumerate(LINES)]
    plain, tallied = (Session(lore, settings=Settings(**SETTINGS), rng=random.Random(1)) for _ in range(2))
    plain.append(*messages)
    tallied.append(*messages)
    held = []
    for index in generation_points(messages):
        t = Tally()
        a, b = plain.activate(upto=index), tallied.activate(upto=index, tally=t)
        assert result_json(a) == result_json(b) and a.timed == b.timed
        held.append({k: sorted(v) for k, v in t.as_dict().items() if v})
    assert held == [{"probability": ["lore.1"]}, {"group": ["lore.6"]},
                    {"cooldown": ["lore.3"], "delay": ["lore.4"]}, {"budget": ["lore.7"]}]


def test_merge_is_order_free_and_budget_bins() -> None:
    a, b = ag.Aggregate(), ag.Aggregate()
    a.entries["x"] = [1, 1, 3, 3, 0, 0, 0, 0, 0, 7]
    b.entries["x"] = [2, 1, 1, 1, 1, 0, 0, 0, 0, 5]
    b.entries["y"] = [1, 1, 2, 2, 0, 0, 0, 0, 0, 1]
    a.chats, b.chats = 1, 1
    ab, ba = ag.Aggregate(), ag.Aggregate()
    for x in (a, b):
        ab.merge(x)
    for x in (b, a):
        ba.merge(x)
    assert ab.entries == ba.entries == {"x": [3, 2, 4, 1, 1, 0, 0, 0, 0, 12], "y": [1, 1, 2, 2, 0, 0, 0, 0, 0, 1]}
    assert ab.chats == 2
    assert [ag.budget_bin(u, 100, False) for u in (0, 4, 5, 99, 100)] == [0, 0, 1, 19, 20]
    assert ag.budget_bin(10, 100, True) == 20 and ag.budget_bin(0, 0, False) == 0


def _spec(paths: dict[str, Path]) -> BatchSpec:
    return BatchSpec(books=(("lore.json", paths["book"].read_bytes()),), settings=Settings(**SETTINGS),
                     tokenizer="chars4", seed=3)


def test_pool_worker_killed_mid_run_reruns_its_chats_once(tmp_path: Path) -> None:
    paths = write_set(tmp_path, copies=40, many=0, bad=False)
    spec = _spec(paths)
    ts = tasks([str(paths["chats"])])
    clean = run_batch(spec, ts, jobs=1)
    killed: list[int] = []

    def kill_one(_task_id: int, _agg: object) -> None:
        if not killed:
            victim = multiprocessing.active_children()[0]
            assert victim.pid is not None
            os.kill(victim.pid, signal.SIGKILL)
            killed.append(victim.pid)

    stats: dict[str, int] = {}
    got = local.run_pool(spec, ts, 2, kill_one, stats=stats)
    assert killed and stats["pools"] >= 2 and stats["resent"] >= 1
    assert report(got, spec) == report(clean, spec)
    assert got.chats == clean.chats == 40


def test_batch_modules_keep_dask_out_of_the_core(tmp_path: Path) -> None:
    code = ("import sys; sys.modules['distributed'] = None; sys.modules['dask'] = None\n"
            "import lorescan, lorescan._batch, lorescan._batch.work, lorescan._cli.replay_batch\n"
            "print(sorted(m for m in sys.modules if m.startswith(('dask', 'distributed')) and sys.modules[m]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    paths = write_set(tmp_path, copies=1, many=0, bad=False)
    code = ("import sys; sys.modules['distributed'] = None\n"
            "from lorescan._cli.main import main\n"
            "sys.exit(main(['replay', '--book', sys.argv[1], '--chats', sys.argv[2], '--dask', 'local']))")
    run = subprocess.run([sys.executable, "-c", code, str(paths["book"]), str(paths["chats"])],
                         capture_output=True, text=True)
    assert run.returncode == 2
    assert run.stderr.strip() == "lorescan: error: --dask needs Dask: pip install 'lorescan[dask]'"


def test_a_pool_worker_raises_its_collectors_thresholds() -> None:
    import gc

    from lorescan._batch import local

    spec = BatchSpec(books=(("lore.json", json.dumps({"entries": {"0": ENTRIES[0]}}).encode()),),
                     settings=Settings(**SETTINGS))
    before = gc.get_threshold()
    try:
        local._init(spec)
        assert gc.get_threshold() == local.WORKER_GC_THRESHOLDS == (50_000, 20, 20)
        assert local._SPEC is spec and local._DIGEST == spec.digest()
    finally:
        gc.set_threshold(*before)
        local._SPEC = local._DIGEST = None


def test_a_chat_that_fails_half_way_adds_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A chat's counts reach its task's aggregate only once every generation is replayed: one that
    raises at its third generation is a failure, and the other chats count as in a clean run."""
    from lorescan._batch import work

    paths = write_set(tmp_path, copies=3, many=0, bad=False)
    spec = _spec(paths)
    ts = tasks([str(paths["chats"])])
    clean = run_batch(spec, ts, jobs=1)
    replayed = work._generations

    def failing(lore, messages, points, seed, names, tally, buckets):   # the second chat fails at its third generation
        failing.calls += 1
        for i, got in enumerate(replayed(lore, messages, points, seed, names, tally, buckets)):
            if failing.calls == 2 and i == 2:
                raise ValueError("no third generation")
            yield got
    failing.calls = 0

    monkeypatch.setattr(work, "_generations", failing)
    got = run_batch(spec, ts, jobs=1)
    second = sorted(t.path for t in ts)[1]
    assert [(f.path, f.error) for f in got.failures] == [(second, "unexpected ValueError: no third generation")]
    assert (got.chats, got.generations) == (2, 8) and (clean.chats, clean.generations) == (3, 12)
    # each chat of this set counts the same: the two left count two thirds of the clean run
    assert {k: [v * 2 // 3 if i != ag.FIRST_MIN else v for i, v in enumerate(row)] for k, row in clean.entries.items()} \
        == got.entries
    assert [c.path for c in got.chat_rows] == sorted(set(t.path for t in ts) - {second})


def test_a_chat_that_always_kills_its_worker_fails_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A chat that kills its worker process every time is listed as a failure after MAX_ATTEMPTS
    broken pools; the chats in flight with it when a pool broke are sent again alone, and count
    once, as in a clean run without the killer."""
    from lorescan._batch import work

    paths = write_set(tmp_path, copies=16, many=0, bad=False)
    spec = _spec(paths)
    ts = tasks([str(paths["chats"])])
    killer = sorted(t.path for t in ts)[5]
    clean = run_batch(spec, [t for t in ts if t.path != killer], jobs=1)
    replay = work.replay_chat

    def deadly(spec, comp, identity, chat, agg):   # noqa: ANN001, ANN202 - replay_chat's signature
        if identity == killer:
            os._exit(9)
        return replay(spec, comp, identity, chat, agg)

    monkeypatch.setattr(work, "replay_chat", deadly)     # forked workers inherit it
    stats: dict[str, int] = {}
    got = local.run_pool(spec, ts, 2, context="fork", stats=stats)
    assert [(f.path, f.error) for f in got.failures] == \
        [(killer, f"its worker process died {local.MAX_ATTEMPTS} times (killed or out of memory)")]
    # The killer breaks MAX_ATTEMPTS pools. One more pool runs the suspects left behind it when a run
    # sent before the killer's was still in flight as the first pool broke (timing: a loaded machine).
    assert got.chats == clean.chats == 15 and local.MAX_ATTEMPTS <= stats["pools"] <= local.MAX_ATTEMPTS + 1
    assert got.entries == clean.entries and got.generations == clean.generations


@pytest.mark.parametrize(("options", "fired"), [
    ((), {"lore.0": 2, "lore.1": 2}),
    (("--macro-engine", "legacy"), {"lore.0": 0, "lore.1": 2}),
    (("--word-boundaries", "unicode"), {"lore.0": 2, "lore.1": 0}),
])
def test_a_batch_compiles_with_the_options_given(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 options: tuple[str, ...], fired: dict[str, int]) -> None:
    """``--macro-engine`` and ``--word-boundaries`` reach the workers: ``{{ user }}`` is the user's
    name (which the scan text holds) only to the new engine, and ``кот`` a whole word in ``котлета``
    only to SillyTavern's ASCII rule."""
    entries = [{"uid": 0, "key": ["{{ user }}"], "content": "u"},
               {"uid": 1, "key": ["кот"], "content": "c", "matchWholeWords": True}]
    paths = write_set(tmp_path, copies=1, many=0, bad=False)
    paths["book"].write_text(json.dumps({"entries": {str(e["uid"]): e for e in entries}}), encoding="utf-8")
    (paths["chats"] / "chat0.jsonl").write_text(st_chat(lines=["Hi.", "котлета", "Ok.", "котлета", "Yes."]),
                                                 encoding="utf-8")
    r = _json(paths, capsys, "--jobs", "1", *options)
    assert {e["key"]: e["fired_generations"] for e in r["entries"]} == fired


def test_a_batch_with_a_wrong_option_fails_once_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = write_set(tmp_path, copies=1, many=0, bad=False)
    rc, _, err = _run_cli(cli_args(paths, "--json", "--st-version", "1.12", "--macro-engine", "new"), capsys)
    assert rc != 0 and err.strip() == "lorescan: error: field 'macro_engine': SillyTavern 1.12.6 has only the legacy macro engine"
