"""Every conformance scenario, posted to a running ``lorescan serve``, gives its exact ``expected``:
as a whole (``POST /v1/activate`` with the scenario minus ``name``, ``tags`` and ``expected``), and
each multi-turn scenario turn by turn through a session, the way a frontend calls it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from lorescan._scenario import run_scenario
from lorescan._service.service import json_bytes

from .conftest import CONFORMANCE
from .serve_helpers import STOPPED, Server, httpx

FILES = sorted(CONFORMANCE.glob("st-*/*.json"))
MULTI_TURN = [p for p in FILES if '"turns"' in p.read_text(encoding="utf-8")]
NOT_INPUTS = ("name", "tags", "expected")
CLIENTS = 4


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


def _scenario(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


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


@pytest.fixture(scope="module")
def whole(client: httpx.Client) -> dict[Path, Any]:
    """Every scenario posted whole, a few at a time (the client's work overlaps the server's)."""
    def post(path: Path) -> Any:
        reply = client.post("/v1/activate", json=body_of(_scenario(path)))
        return reply.status_code, reply.json(), reply.content
    with ThreadPoolExecutor(CLIENTS) as pool:
        return dict(zip(FILES, pool.map(_caught(post), FILES)))


@pytest.fixture(scope="module")
def by_turns(client: httpx.Client, whole: dict[Path, Any]) -> dict[Path, Any]:
    """Every multi-turn scenario turn by turn through a session: each chat in order, several at a time."""
    def run(path: Path) -> Any:
        sc = _scenario(path)
        session = _id(path).replace("/", ":")
        got = []
        for body in turn_bodies(sc, session):
            reply = client.post("/v1/activate", json=body)
            assert reply.status_code == 200, reply.text
            got.append(reply.json()["result"])
        return got, client.get(f"/v1/sessions/{session}")
    with ThreadPoolExecutor(CLIENTS) as pool:
        return dict(zip(MULTI_TURN, pool.map(_caught(run), MULTI_TURN)))


def _caught(fn: Any) -> Any:
    def run(path: Path) -> Any:
        try:
            return fn(path)
        except Exception as exc:        # reported by the test of that file
            return exc
    return run


@pytest.mark.parametrize("path", FILES, ids=_id)
def test_a_posted_scenario_gives_its_expected_result(whole: dict[Path, Any], path: Path) -> None:
    got = whole[path]
    if isinstance(got, Exception):
        raise got
    status, body, _ = got
    assert status == 200, body
    assert body == {"result": _scenario(path)["expected"]}


@pytest.mark.parametrize("path", FILES, ids=_id)
def test_a_reply_is_byte_for_byte_the_library_result(whole: dict[Path, Any], path: Path) -> None:
    """The service's reply, key order and escapes included, is the library's ``result_json`` written
    by the service's JSON writer."""
    got = whole[path]
    if isinstance(got, Exception):
        raise got
    status, _, raw = got
    assert status == 200, raw
    assert raw == json_bytes({"result": run_scenario(_scenario(path))})


@pytest.mark.parametrize("path", MULTI_TURN, ids=_id)
def test_turn_by_turn_through_a_session_gives_the_same_timed_results(by_turns: dict[Path, Any], path: Path) -> None:
    sc = _scenario(path)
    outcome = by_turns[path]
    if isinstance(outcome, Exception):
        raise outcome
    got, session = outcome
    assert got == sc["expected"]["turns"]
    if any(not t.get("dry_run", sc.get("dry_run")) for t in sc["turns"]):
        stored = session.json()
        last = next(r for r, t in zip(reversed(got), reversed(sc["turns"]))
                    if not t.get("dry_run", sc.get("dry_run")))
        assert {kind: {k: {f: v for f, v in e.items() if f != "hash"} for k, e in stored["timed"][kind].items()}
                for kind in ("sticky", "cooldown")} == last["timed"]


@pytest.mark.parametrize("body", [
    {"result": {"before": "line one\nline \"two\" \\ é 😀 \ud800", "depth": [{"depth": 4, "role": 0, "entries": ["x"]}],
                "budget": 2.5, "n": None, "ok": True, "keys": {1: "int key", 2.5: "float key", None: "none"}}},
    ["top", "level", 1, -0.0, 1e300],
    "a string alone\n",
    {"nan": float("nan"), "inf": [float("inf"), -float("inf")]},
])
def test_json_bytes_are_the_standard_encoders_bytes(body) -> None:
    import math

    def finite(v):
        if isinstance(v, float):
            return v if math.isfinite(v) else None
        if isinstance(v, dict):
            return {k: finite(x) for k, x in v.items()}
        if isinstance(v, list):
            return [finite(x) for x in v]
        return v

    expected = json.dumps(finite(body), separators=(",", ":"), allow_nan=False).encode("ascii")
    assert json_bytes(body) == expected
