"""A plain JSON-RPC client for `agentwatch mcp` over stdio: one process, newline-delimited
messages as the MCP stdio transport defines them, no SDK in between (what goes over the pipe
is what Claude Code sees)."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

PROTOCOL = "2025-06-18"


class McpProcess:
    """`agentwatch --config CONFIG mcp` with a reader thread; `call` waits for the answer."""

    def __init__(self, config: Path, cwd: Path, env: dict[str, str] | None = None):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "agentwatch.cli", "--config", str(config), "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env={**os.environ, **(env or {})},
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(b"")

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send a request; its response (result or error), skipping notifications."""
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params or {}})
        deadline = time.monotonic() + 60
        while True:
            line = self.lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            assert line, f"the server closed stdout; stderr: {self.stderr()}"
            message = json.loads(line)
            if message.get("id") == self.next_id:
                return message

    def initialize(self) -> dict[str, Any]:
        answer = self.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL,
                "capabilities": {},
                "clientInfo": {"name": "agentwatch-tests", "version": "0"},
            },
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer

    def call(self, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """The tools/call result (with `isError`), or the JSON-RPC error object."""
        answer = self.request("tools/call", {"name": tool, "arguments": arguments or {}})
        return answer.get("result") or {"jsonrpc_error": answer.get("error")}

    def stderr(self) -> str:
        if self.proc.poll() is None:
            return "(still running)"
        assert self.proc.stderr is not None
        return self.proc.stderr.read().decode(errors="replace")[-3000:]

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> McpProcess:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def text_of(result: dict[str, Any]) -> str:
    """The text content of a tool result."""
    return "".join(part.get("text", "") for part in result.get("content", []))
