"""The HTTP activation service (``lorescan serve``): FastAPI, uvicorn, prometheus-client and
httptools, from the ``serve`` extra. Nothing outside this package and ``_cli/cmd_serve.py`` imports
them, so the library and the other commands work without them.

``config`` (settings, data directory), ``store`` (SQLite: books and sessions), ``cache`` (compiled
books by content hash), ``metrics`` (Prometheus), ``models`` (the JSON bodies), ``activation`` and
``books`` (what the routes do, off the event loop), ``api`` (the routes), ``service`` (the state
of a running service and its concurrency model), ``proxy`` (the OpenAI-compatible proxy) and
``upstream`` (its HTTP/1.1 client), ``placement`` (where the lore goes in chat messages),
``plugins`` (the proxy's hooks) and ``app`` (:func:`create_app`: middleware and error replies).
``config`` imports none of them (the command line reads its defaults).
"""
