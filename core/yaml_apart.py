"""A resident process's YAML config, parsed by a short-lived child so the process never loads
the YAML parser.

Each installed unit (the exporter, every sentinel loop, the controller) is its own interpreter
and reads config.yaml once at start; the parser then stays in it for good: 1.4 MiB of PSS in
each of nine processes (issue 29, the kit's summed memory; unloading it frees nothing, its C
extension keeps the modules alive). So a resident command has its file's text parsed by
`python -m agentwatch.core.yaml_apart`, which prints the parsed document as JSON, and the
process reads that. Anything the child cannot hand over exactly (a value JSON does not
carry, such as a date or a non-string key; the child not starting, failing or timing out)
is parsed in the process as before: the answer never differs, only where it is computed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

TIMEOUT = 60.0  # seconds; a child slower than this is given up and the process parses
PARSE_HERE = object()  # the child could not hand the document over: parse in the process


def parse(path: Path, text: str) -> Any:
    """The document (a dict, list, ...), `{"problems": [...]}` wrapped as ConfigError by the
    caller, or PARSE_HERE."""
    try:
        done = subprocess.run(
            [sys.executable, "-P", "-m", "agentwatch.core.yaml_apart", str(path)],
            input=text.encode(),
            capture_output=True,
            timeout=TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return PARSE_HERE
    if done.returncode != 0:
        return PARSE_HERE
    try:
        answer = json.loads(done.stdout)
    except ValueError:
        return PARSE_HERE
    if not isinstance(answer, dict) or not ({"raw"} == answer.keys() or "problems" in answer):
        return PARSE_HERE
    return answer


def _answer(path: Path, text: str) -> dict[str, Any]:
    from agentwatch.core import config

    try:
        raw = config.parse_yaml(path, text)
    except config.ConfigError as err:
        return {"problems": err.problems}
    try:
        exact = json.loads(json.dumps(raw)) == raw
    except (TypeError, ValueError, RecursionError):
        exact = False
    return {"raw": raw} if exact else {}


def main() -> int:
    text = sys.stdin.buffer.read().decode()
    print(json.dumps(_answer(Path(sys.argv[1]), text)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
