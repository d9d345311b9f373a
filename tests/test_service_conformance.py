"""Every conformance scenario, posted to a running ``lorescan serve``, gives its exact ``expected``:
as a whole (``POST /v1/activate`` with the scenario minus ``name``, ``tags`` and ``expected``), and
each multi-turn scenario turn by turn through a session, the way a frontend calls it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import CONFORMANCE
from .serve_helpers import STOPPED, Server, httpx

FILES = sorted(CONFORMANCE.glob("st-*/*.json"))
NOT_INPUTS = ("name", "tags", "expected")


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


def _scenario(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def _multi_turn(paths: list[Path]) -> list[Path]:
    return [p for p in paths if '"turns"' in p.read_text(encoding="utf-8")]


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    server = Server(tmp_path_factory.mktemp("serve") / "data")
    try:
        with server.client() as c:
            yield c
    finally:
        assert server.stop() in STOPPED, server.output()


def body_of(sc: dict[str, Any]) -> dict[str, Any]:
    """A scenario as a frontend would post it: every input, nothing else."""
    return {k: v for k, v in sc.items() if k not in NOT_INPUTS}


def turn_bodies(sc: dict[str, Any], session: str) -> list[dict[str, Any]]:
    """One single-evaluation body per turn, as a frontend sends them: the chat as it stands, the
    turn's fields over the scenario's (settings merged key by key), and the session."""
    base = {k: v for k, v in body_of(sc).items() if k != "turns"}
    chat = list(sc.get("chat") or [])
    bodies = []
    for turn in sc["turns"]:
        if "chat" in turn:
            chat = list(turn["chat"])
        chat = chat + list(turn.get("append") or [])
        body = {**base, **{k: v for k, v in turn.items() if k not in ("chat", "append", "settings")}}
        body["settings"] = {**(sc.get("settings") or {}), **(turn.get("settings") or {})}
        body["chat"] = chat
        body["session"] = session
        bodies.append(body)
    return bodies


@pytest.mark.parametrize("path", FILES, ids=_id)
def test_a_posted_scenario_gives_its_expected_result(client: httpx.Client, path: Path) -> None:
    sc = _scenario(path)
    reply = client.post("/v1/activate", json=body_of(sc))
    assert reply.status_code == 200, reply.text
    assert reply.json() == {"result": sc["expected"]}


@pytest.mark.parametrize("path", _multi_turn(FILES), ids=_id)
def test_turn_by_turn_through_a_session_gives_the_same_timed_results(client: httpx.Client, path: Path) -> None:
    sc = _scenario(path)
    session = _id(path).replace("/", ":")
    got = []
    for body in turn_bodies(sc, session):
        reply = client.post("/v1/activate", json=body)
        assert reply.status_code == 200, reply.text
        got.append(reply.json()["result"])
    assert got == sc["expected"]["turns"]
    if any(not t.get("dry_run", sc.get("dry_run")) for t in sc["turns"]):
        stored = client.get(f"/v1/sessions/{session}").json()
        last = next(r for r, t in zip(reversed(got), reversed(sc["turns"]))
                    if not t.get("dry_run", sc.get("dry_run")))
        assert {kind: {k: {f: v for f, v in e.items() if f != "hash"} for k, e in stored["timed"][kind].items()}
                for kind in ("sticky", "cooldown")} == last["timed"]
