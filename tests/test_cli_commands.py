"""The command table is the one list of commands: it equals the ``cmd_*.py`` modules, every
command is in ``lorescan --help``, and a command whose module is missing is an error."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

import lorescan._cli
from lorescan._cli import main as cli_main
from lorescan._cli.main import COMMANDS, build_parser, main

CLI_DIR = Path(lorescan._cli.__file__).parent


def test_command_table_equals_the_command_modules() -> None:
    modules = sorted(p.stem.removeprefix("cmd_") for p in CLI_DIR.glob("cmd_*.py"))
    assert len(COMMANDS) == len(set(COMMANDS))
    assert sorted(COMMANDS) == modules


def test_each_module_registers_the_command_it_is_named_for() -> None:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert list(sub.choices) == list(COMMANDS)


def test_every_command_is_in_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    section = out.split("positional arguments:")[1].split("options:")[0]
    listed = re.findall(r"^ {4}(\S+)", section, flags=re.MULTILINE)   # wrapped help lines go deeper
    assert listed == list(COMMANDS)


def test_a_missing_command_module_is_an_import_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli_main, "COMMANDS", (*COMMANDS, "no_such_command"))
    with pytest.raises(ModuleNotFoundError, match="lorescan._cli.cmd_no_such_command"):
        build_parser()


def test_a_named_command_builds_its_parser_alone() -> None:
    sub = next(a for a in build_parser("info")._actions if isinstance(a, argparse._SubParsersAction))
    assert list(sub.choices) == ["info"]
    code = _exit_status(["info", "--help"])
    assert code == 0


def _exit_status(argv: list[str]) -> int:
    """``main(argv)``'s exit status (``--help`` exits through SystemExit)."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
