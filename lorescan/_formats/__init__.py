"""Readers and writers for every lorebook, character card and chat format lorescan knows.

One module per format family; :mod:`lorescan._load` detects a file's format from its content and
dispatches here. Conversions to engine entries follow SillyTavern's own importers where it has
one, so a book behaves in lorescan as it would after importing it into SillyTavern.
"""

from __future__ import annotations

#: Format name → what it is (the names ``lorescan info`` prints and ``convert --to`` takes).
FORMATS: dict[str, str] = {
    "st": "SillyTavern world info JSON",
    "lorebook_v3": "standalone V3 lorebook {spec: lorebook_v3, data}",
    "charbook": "bare V2/V3 character_book JSON {name, entries: [...]}",
    "novelai": "NovelAI .lorebook JSON",
    "novelai-scenario": "NovelAI .scenario (its lorebook)",
    "novelai-png": "NovelAI lorebook image (PNG tEXt naidata)",
    "agnai": "Agnai memory book",
    "risu": "RisuAI lorebook export",
    "kobold": "KoboldAI United world info",
    "kobold-lite": "KoboldAI Lite world info (array or save)",
    "ccv1": "character card V1 JSON (incl. Pygmalion/gradio)",
    "ccv2": "character card V2 JSON (chara_card_v2)",
    "ccv3": "character card V3 JSON (chara_card_v3)",
    "png": "character card PNG (tEXt chara/ccv3)",
    "charx": "CHARX character archive (ZIP with card.json)",
    "st-chat": "SillyTavern chat .jsonl",
    "tavernai-chat": "TavernAI legacy chat (JSON array of 'Name: text')",
    "openai": "OpenAI messages JSON (array or {messages})",
    "openai-jsonl": "OpenAI messages JSONL",
    "glm": "ChatGLM / GLM-4 history (JSON or YAML)",
    "transcript": "plain-text 'Name: message' transcript",
}

BOOK_FORMATS = ("st", "lorebook_v3", "charbook", "novelai", "novelai-scenario", "novelai-png", "agnai",
                "risu", "kobold", "kobold-lite")
CARD_FORMATS = ("ccv1", "ccv2", "ccv3", "png", "charx")
CHAT_FORMATS = ("st-chat", "tavernai-chat", "openai", "openai-jsonl", "glm", "transcript")

__all__ = ["BOOK_FORMATS", "CARD_FORMATS", "CHAT_FORMATS", "FORMATS"]
