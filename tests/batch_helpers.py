"""Small books and chats for the batch replay tests, written into a test's folder."""

from __future__ import annotations

import json
from pathlib import Path

ENTRIES = [
    {"uid": 0, "key": ["dragon"], "content": "Dragons hoard gold.", "comment": "Dragon"},
    {"uid": 1, "key": ["gold"], "content": "Gold.", "probability": 0, "useProbability": True, "comment": "Gold"},
    {"uid": 2, "key": ["never"], "content": "Never.", "comment": "Unused"},
    {"uid": 3, "key": ["tea"], "content": "Tea.", "cooldown": 3, "comment": "Tea"},
    {"uid": 4, "key": ["castle"], "content": "Castle.", "delay": 7, "comment": "Castle"},
    {"uid": 5, "key": ["sword"], "content": "A sword.", "group": "weapons", "groupOverride": True, "order": 200,
     "comment": "Sword"},
    {"uid": 6, "key": ["sword"], "content": "Another sword.", "group": "weapons", "comment": "Sword alt"},
    {"uid": 7, "key": ["feast"], "content": "f" * 400, "comment": "Feast"},
]
#: user, character alternate; the greeting first
LINES = ["Welcome.", "I saw a dragon and gold.", "Yes.", "Tea please, and a sword.", "Here.",
         "More tea. The castle!", "Sure.", "A feast!", "Ok."]
SETTINGS = {"max_context": 200}          # budget: 25 % of 200 = 50 tokens (chars4: 200 characters)


def st_chat(user: str = "Ann", char: str = "Bo", lines: list[str] = LINES) -> str:
    """A SillyTavern .jsonl chat: header, then messages, the character first."""
    out = [json.dumps({"user_name": user, "character_name": char, "chat_metadata": {}})]
    for i, text in enumerate(lines):
        out.append(json.dumps({"name": user if i % 2 else char, "is_user": bool(i % 2), "mes": text}))
    return "\n".join(out) + "\n"


def conversation(lines: list[str] = LINES) -> str:
    """One OpenAI-style conversation object (a line of a many-chat .jsonl file)."""
    return json.dumps({"messages": [{"role": "user" if i % 2 else "assistant", "content": t}
                                    for i, t in enumerate(lines)]})


def write_set(root: Path, *, copies: int = 3, many: int = 2, bad: bool = True) -> dict[str, Path]:
    """The book (``lore.json``), settings and a chats folder: ``copies`` SillyTavern chats, a
    many-chat file of ``many`` conversations (when ``many``), a malformed chat (when ``bad``)."""
    root.mkdir(parents=True, exist_ok=True)
    book = root / "lore.json"
    book.write_text(json.dumps({"entries": {str(e["uid"]): e for e in ENTRIES}}), encoding="utf-8")
    settings = root / "settings.json"
    settings.write_text(json.dumps(SETTINGS), encoding="utf-8")
    chats = root / "chats"
    chats.mkdir(exist_ok=True)
    for i in range(copies):
        (chats / f"chat{i}.jsonl").write_text(st_chat(), encoding="utf-8")
    if many:
        (chats / "many.jsonl").write_text("\n".join(conversation() for _ in range(many)) + "\n", encoding="utf-8")
    if bad:
        (chats / "broken.jsonl").write_text('{"user_name": "Ann"}\n{"name": "Bo", "is_user": false, "mes": 5}\n',
                                            encoding="utf-8")
    return {"book": book, "settings": settings, "chats": chats}


def cli_args(paths: dict[str, Path], *extra: str) -> list[str]:
    return ["replay", "--book", str(paths["book"]), "--settings", str(paths["settings"]), "--tokenizer", "chars4",
            "--chats", str(paths["chats"]), "--no-progress", *extra]
