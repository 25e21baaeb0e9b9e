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
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

TIMEOUT = 60.0  # seconds; a child slower than this is killed and the process parses
PARSE_HERE = object()  # the child could not hand the document over: parse in the process


def parse(path: Path, text: str) -> Any:
    """The document (a dict, list, ...), `{"problems": [...]}` wrapped as ConfigError by the
    caller, or PARSE_HERE."""
    output = _run([sys.executable, "-P", "-m", "agentwatch.core.yaml_apart", str(path)], text)
    if output is None:
        return PARSE_HERE
    try:
        answer = json.loads(output)
    except ValueError:
        return PARSE_HERE
    if not isinstance(answer, dict) or not ({"raw"} == answer.keys() or "problems" in answer):
        return PARSE_HERE
    return answer


def _run(argv: list[str], text: str) -> bytes | None:
    """The child's output, None unless it exits 0 within TIMEOUT. os.posix_spawn and pipes,
    not the subprocess module: that is 0.35 MiB more in a process that spawns nothing else."""
    child_in, feed = os.pipe()
    answer, child_out = os.pipe()
    try:
        pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=[
            (os.POSIX_SPAWN_DUP2, child_in, 0),
            (os.POSIX_SPAWN_DUP2, child_out, 1),
            (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
        ])  # fmt: skip
    except OSError:
        for fd in (child_in, feed, answer, child_out):
            os.close(fd)
        return None
    os.close(child_in)
    os.close(child_out)
    timer = threading.Timer(TIMEOUT, os.kill, (pid, signal.SIGKILL))
    timer.start()
    output = b""
    with open(feed, "wb") as to_child, open(answer, "rb") as from_child:
        try:
            to_child.write(text.encode())
            to_child.close()  # the child reads to the end before it answers
            output = from_child.read()
        except OSError:  # the child went away without reading (killed, or failed to start)
            pass
        finally:
            timer.cancel()
            _, status = os.waitpid(pid, 0)
    return output if os.waitstatus_to_exitcode(status) == 0 else None


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
