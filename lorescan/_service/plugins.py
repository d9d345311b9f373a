"""Proxy plugins: code that runs around each chat completion the proxy forwards.

A plugin is a class derived from :class:`Plugin`, constructed without arguments, registered
through the entry-point group ``lorescan.plugins``::

    [project.entry-points."lorescan.plugins"]
    redact = "my_package.plugins:Redact"

Two hooks, each a plain or an ``async`` method:

- ``before_prompt_rendered(context)``: after the lore is placed, before forwarding; it may return
  the messages to forward instead (``None`` keeps them). Called for requests with a
  ``LORESCAN_SYSTEM`` header only: one without passes through byte for byte.
- ``after_response_generation(context, response)``: once the answer is complete, streamed or not
  (not when the client left first), for every completion forwarded.

A plugin that raises is logged with its traceback and skipped; the request goes on. Plugins never
reach into the engine: they see the messages, the header and the activation result as JSON.
The proxy's Prometheus metrics are the built-in plugin :class:`MetricsPlugin`.
"""

from __future__ import annotations

import inspect
import logging
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

log = logging.getLogger("lorescan.serve")
GROUP = "lorescan.plugins"
UPSTREAM_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)


@dataclass
class CompletionContext:
    """One chat completion on its way through the proxy.

    ``body``: the request's JSON (the header removed; its ``messages`` are those placed).
    ``messages``: what will be forwarded (a hook may return new ones). ``header``: the
    ``LORESCAN_SYSTEM`` object (``None`` when the request had none). ``result``: the activation
    result in the ``expected`` shape (``None`` without a header). ``stream``: whether the client
    asked for server-sent events. ``upstream_seconds``: from forwarding to the complete answer.
    """

    body: dict[str, Any] | None
    messages: list[Any]
    header: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    stream: bool = False
    upstream_seconds: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def activated(self) -> list[str]:
        """The activated entries as ``book.uid``, in activation order."""
        return list(self.result["activated"]) if self.result else []


@dataclass
class CompletionResponse:
    """The upstream's complete answer: its status and JSON body; for a stream, a
    ``chat.completion`` body assembled from the chunks (text per choice, and usage when the
    upstream reported it). ``body`` is ``None`` when the answer was not JSON."""

    status: int
    body: dict[str, Any] | None
    streamed: bool = False

    @property
    def usage(self) -> dict[str, Any] | None:
        usage = (self.body or {}).get("usage")
        return usage if isinstance(usage, dict) else None


class Plugin:
    """The base class of proxy plugins (see the module docstring); override either hook."""

    #: the name ``--list-plugins`` and the logs show (default: the entry point's name)
    name: str = ""

    def before_prompt_rendered(self, context: CompletionContext) -> Any:
        """The messages to forward, or ``None`` to keep ``context.messages``."""
        return None

    def after_response_generation(self, context: CompletionContext, response: CompletionResponse) -> Any:
        """Called once the answer is complete."""
        return None


class MetricsPlugin(Plugin):
    """Built in: upstream latency, tokens in and out (when the upstream reports usage), entries injected."""

    name = "metrics"

    def __init__(self, registry: CollectorRegistry) -> None:
        from prometheus_client import Counter, Histogram

        self.latency = Histogram("lorescan_upstream_seconds", "Time from forwarding a chat completion to its "
                                 "complete answer", ("status",), buckets=UPSTREAM_BUCKETS, registry=registry)
        self.tokens = Counter("lorescan_upstream_tokens", "Tokens the upstream reported (usage), by direction",
                              ("direction",), registry=registry)
        self.injected = Counter("lorescan_entries_injected", "Activated entries placed into forwarded chat "
                                "completions", registry=registry)
        #: the labelled series made so far, by status and by direction (``labels`` runs the client
        #: library's checks on every call)
        self._by_status: dict[str, Any] = {}
        self._by_direction: dict[str, Any] = {}

    def before_prompt_rendered(self, context: CompletionContext) -> None:
        self.injected.inc(len(context.activated))

    def after_response_generation(self, context: CompletionContext, response: CompletionResponse) -> None:
        if context.upstream_seconds is not None:
            status = str(response.status)
            series = self._by_status.get(status) or self._by_status.setdefault(status, self.latency.labels(status))
            series.observe(context.upstream_seconds)
        usage = response.usage
        if usage:
            for key, direction in (("prompt_tokens", "in"), ("completion_tokens", "out")):
                value = usage.get(key)
                if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                    counter = self._by_direction.get(direction) \
                        or self._by_direction.setdefault(direction, self.tokens.labels(direction))
                    counter.inc(value)


@dataclass(frozen=True)
class PluginInfo:
    """What ``--list-plugins`` shows of one plugin."""

    name: str
    source: str
    summary: str
    error: str | None = None


def _summary(cls: Any) -> str:
    doc = inspect.getdoc(cls) or ""
    return doc.splitlines()[0] if doc else ""


def discover() -> tuple[list[tuple[str, type[Plugin]]], list[PluginInfo]]:
    """The plugin classes registered in ``lorescan.plugins``, and what to list for each (an entry
    point that does not load, or is not a :class:`Plugin`, is listed with its error and skipped)."""
    found: list[tuple[str, type[Plugin]]] = []
    infos = [PluginInfo(MetricsPlugin.name, "built-in", _summary(MetricsPlugin))]
    for ep in sorted(entry_points(group=GROUP), key=lambda e: e.name):
        try:
            cls = ep.load()
        except Exception as exc:     # a broken third-party package must not stop the service
            log.error("plugin %s (%s) does not load: %s: %s", ep.name, ep.value, type(exc).__name__, exc)
            infos.append(PluginInfo(ep.name, ep.value, "", f"does not load: {type(exc).__name__}: {exc}"))
            continue
        if not (isinstance(cls, type) and issubclass(cls, Plugin)):
            log.error("plugin %s (%s) is not a lorescan Plugin class; skipped", ep.name, ep.value)
            infos.append(PluginInfo(ep.name, ep.value, "", "is not a subclass of lorescan's Plugin"))
            continue
        found.append((cls.name or ep.name, cls))
        infos.append(PluginInfo(cls.name or ep.name, ep.value, _summary(cls)))
    return found, infos


class Plugins:
    """The plugins of one running proxy, called in order: the built-in metrics first, then the
    registered ones by entry-point name."""

    def __init__(self, plugins: list[tuple[str, Plugin]]) -> None:
        self.plugins = plugins

    @classmethod
    def load(cls, registry: CollectorRegistry) -> Plugins:
        """The built-in metrics plugin and every registered plugin that can be constructed."""
        plugins: list[tuple[str, Plugin]] = [(MetricsPlugin.name, MetricsPlugin(registry))]
        for name, plugin_class in discover()[0]:
            try:
                plugins.append((name, plugin_class()))
            except Exception:
                log.exception("plugin %s could not be constructed; skipped", name)
        return cls(plugins)

    async def before(self, context: CompletionContext) -> list[Any]:
        """Run ``before_prompt_rendered`` of each plugin; the messages to forward."""
        for name, plugin in self.plugins:
            try:
                got = plugin.before_prompt_rendered(context)
                if inspect.isawaitable(got):
                    got = await got
            except Exception:
                log.exception("plugin %s failed in before_prompt_rendered; skipped", name)
                continue
            if got is None:
                continue
            if isinstance(got, list):
                context.messages = got
            else:
                log.error("plugin %s returned %s from before_prompt_rendered, not a list of messages; ignored",
                          name, type(got).__name__)
        return context.messages

    async def after(self, context: CompletionContext, response: CompletionResponse) -> None:
        """Run ``after_response_generation`` of each plugin."""
        for name, plugin in self.plugins:
            try:
                got = plugin.after_response_generation(context, response)
                if inspect.isawaitable(got):
                    await got
            except Exception:
                log.exception("plugin %s failed in after_response_generation; skipped", name)
