"""The public API is exactly ``__all__``: no leaked name, none missing, none shadowed by a submodule."""

import json
import subprocess
import sys

import lorescan

INCLUDED_PRIVATE = {"__version__"}


def _public(namespace: dict[str, object]) -> list[str]:
    return sorted(k for k in namespace if not k.startswith("_") or k in INCLUDED_PRIVATE)


def test_all_equals_public_names() -> None:
    assert lorescan.__all__ == _public(vars(lorescan))


def test_public_names_survive_using_every_stage() -> None:
    # Importing a stage's module binds it on the package; it must never rebind a public name.
    code = (
        "import json, lorescan\n"
        "before = {k: type(v).__name__ for k, v in vars(lorescan).items() if not k.startswith('_')}\n"
        "book = lorescan.load('corpora/saltmere.json').books[0]\n"
        "lorescan.load('corpora/saltmere-chat.jsonl')\n"
        "lore = lorescan.compile([book], tokenizer='chars4')\n"
        "lorescan.compile([book], tokenizer='chars4')\n"
        "list(lorescan.replay(lore, lorescan.load('corpora/saltmere-chat.jsonl').chat.messages))\n"
        "import lorescan._cli.main, lorescan._formats, lorescan._explain, lorescan._report\n"
        "after = {k: type(v).__name__ for k, v in vars(lorescan).items() if not k.startswith('_')}\n"
        "print(json.dumps([before == after, sorted(after)]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    same, names = json.loads(out.stdout)
    assert same is True
    assert names == [n for n in lorescan.__all__ if n not in INCLUDED_PRIVATE]
