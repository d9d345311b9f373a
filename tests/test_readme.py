"""The README's Python API section runs exactly as a user would copy it, twice in one process."""

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _api_section_code() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Python API\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert blocks, "the Python API section has no python example"
    return "\n".join(blocks)


def test_python_api_section_runs_twice_in_a_fresh_process() -> None:
    runner = (
        "import json, sys\n"
        "code = sys.stdin.read()\n"
        "seen = []\n"
        "for _ in range(2):\n"
        "    ns = {'__name__': '__main__'}\n"
        "    exec(compile(code, 'README.md', 'exec'), ns)\n"
        "    seen.append([ns['result'].activated_keys(), ns['session'].activate().activated_keys(),\n"
        "                 ns['generation'].index, ns['generation'].result.activated_keys()])\n"
        "print('RESULT ' + json.dumps(seen))\n"
    )
    out = subprocess.run([sys.executable, "-c", runner], input=_api_section_code(), cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    first, second = json.loads(out.stdout.rsplit("RESULT ", 1)[1])
    assert first == second
    keys, session_keys, last_index, last_keys = first
    # Recursion is on in the example: the lighthouse entries pull in the rest.
    assert keys == ["saltmere.0", "saltmere.1", "saltmere.2", "saltmere.3", "saltmere.8", "saltmere.4",
                    "saltmere.6", "saltmere.7"]
    assert session_keys == ["saltmere.0", "saltmere.1"]
    assert last_index == 12 and last_keys == ["saltmere.0", "saltmere.9", "saltmere.10"]
