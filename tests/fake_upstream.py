"""A fake OpenAI-compatible upstream for the proxy's tests and benchmark: a small ASGI app on a
loopback port that records the exact requests it receives and answers as the request's ``model``
asks:

- any model: a ``chat.completion`` saying "The bell rings." with usage (11 tokens in, 3 out), or
  with ``stream: true`` the same as server-sent events, three content chunks then usage;
- ``held`` (streaming): after the first chunk, waits until the test calls :meth:`release`;
- ``endless`` (streaming): a chunk every 20 ms until the client goes away (at most 30 s);
- ``slow``: answers after 5 s;
- ``error``: 429 with an OpenAI error body and ``Retry-After: 7``.

In a test it runs in a thread (:meth:`FakeUpstream.start`); ``python -m tests.fake_upstream PORT``
runs it as a process of its own (the benchmark does).
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

TEXT = ("The", " bell", " rings.")
USAGE = {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}
LIMIT = 30.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def completion(model: str) -> dict[str, Any]:
    return {"id": "chatcmpl-fake", "object": "chat.completion", "created": 1, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "".join(TEXT)},
                         "finish_reason": "stop"}], "usage": USAGE}


def chunk(model: str, delta: dict[str, Any], finish: str | None = None, usage: Any = None) -> bytes:
    event: dict[str, Any] = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1, "model": model,
                             "choices": [{"index": 0, "delta": delta, "finish_reason": finish}] if delta or finish
                             else []}
    if usage is not None:
        event["usage"] = usage
    return b"data: " + json.dumps(event).encode() + b"\n\n"


class FakeUpstream:
    """The fake upstream (see the module docstring); ``received`` holds every request, in order."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.received: list[dict[str, Any]] = []
        self.released = threading.Event()
        self.finished = threading.Event()     # a stream was sent to its end
        self.cancelled = threading.Event()    # a stream ended because the client went away
        self.app = Starlette(routes=[Route("/v1/chat/completions", self.completions, methods=["POST"]),
                                     Route("/v1/models", self.models, methods=["GET"])])
        self.server: uvicorn.Server | None = None
        self.thread: threading.Thread | None = None

    # -- control -----------------------------------------------------------------------------
    def reset(self) -> None:
        self.received.clear()
        for event in (self.released, self.finished, self.cancelled):
            event.clear()

    def release(self) -> None:
        self.released.set()

    def last(self) -> dict[str, Any]:
        return self.received[-1]

    def start(self) -> FakeUpstream:
        config = uvicorn.Config(self.app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the fake upstream did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self.server is not None and self.thread is not None:
            self.server.should_exit = True
            self.thread.join(30)

    # -- routes ------------------------------------------------------------------------------
    async def models(self, request: Request) -> Response:
        self.received.append({"path": "/v1/models", "headers": dict(request.headers), "body": b"",
                              "query": request.url.query})
        return JSONResponse({"object": "list", "data": [{"id": "fake-model", "object": "model", "created": 1,
                                                         "owned_by": "lorescan-tests"}]})

    async def completions(self, request: Request) -> Response:
        raw = await request.body()
        body = json.loads(raw)
        self.received.append({"path": "/v1/chat/completions", "headers": dict(request.headers), "body": raw,
                              "json": body, "messages": body.get("messages")})
        model = body.get("model", "")
        if model == "error":
            return JSONResponse({"error": {"message": "Rate limit reached", "type": "rate_limit", "param": None,
                                           "code": "rate_limit"}}, status_code=429, headers={"Retry-After": "7"})
        if model == "slow":
            await asyncio.sleep(5)
        if body.get("stream"):
            return StreamingResponse(self.events(model), media_type="text/event-stream")
        return JSONResponse(completion(model), headers={"X-Upstream": "fake", "Set-Cookie": "upstream=seen; Path=/"})

    async def events(self, model: str) -> AsyncIterator[bytes]:
        done = False
        try:
            yield chunk(model, {"role": "assistant", "content": TEXT[0]})
            if model == "held":
                deadline = time.monotonic() + LIMIT
                while not self.released.is_set() and time.monotonic() < deadline:
                    await asyncio.sleep(0.005)
            if model == "endless":
                deadline = time.monotonic() + LIMIT
                while time.monotonic() < deadline:
                    await asyncio.sleep(0.02)
                    yield chunk(model, {"content": "."})
            for piece in TEXT[1:]:
                yield chunk(model, {"content": piece})
            yield chunk(model, {}, finish="stop")
            yield chunk(model, {}, usage=USAGE)
            yield b"data: [DONE]\n\n"
            done = True
            self.finished.set()
        finally:
            if not done:
                self.cancelled.set()


if __name__ == "__main__":
    uvicorn.run(FakeUpstream(int(sys.argv[1])).app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
