"""The demo's other agent CLIs: Codex CLI, Gemini CLI and OpenCode sessions that spend tokens.

With no such agent on the machine, the agent ledger would have nothing to read, so the demo
writes their session files the way the real programs write them (the shapes of the files
the real CLIs wrote in tests/fixtures/agents/, fewer fields): a Codex rollout with cumulative
`token_count` events, a Gemini CLI chat log of JSON lines, an OpenCode SQLite database with
one `message` row per model step. One response per agent every `--every` seconds, until
stopped. Only scripted numbers and names go in: no prompt text is invented.

    python -m agentwatch.demo.other_agents DIR [--every SECONDS]

The agent ledger finds them through CODEX_HOME=DIR/codex, GEMINI_DATA_DIR=DIR/gemini/tmp and
OPENCODE_DATA_DIR=DIR/opencode (`agentwatch up` sets them for its sentinels).
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import sqlite3
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

PROJECT = "demo-shop"  # the working directory's name in every session


def env_for(root: Path) -> dict[str, str]:
    """Where the agent ledger looks, for the demo's folder."""
    return {
        "CODEX_HOME": str(root / "codex"),
        "GEMINI_DATA_DIR": str(root / "gemini" / "tmp"),
        "OPENCODE_DATA_DIR": str(root / "opencode"),
    }


def _iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _line(record: dict) -> str:
    return json.dumps(record, separators=(",", ":")) + "\n"


class CodexSession:
    """A rollout as Codex CLI 0.171 writes it: session_meta, turn_context (the model), then an
    event_msg of type token_count per response with the session's running totals."""

    MODEL = "gpt-5.4"

    def __init__(self, root: Path, now: float):
        self.id = str(uuid.uuid4())
        day = datetime.fromtimestamp(now, UTC)
        stamp = day.strftime("%Y-%m-%dT%H-%M-%S")
        folder = root / "codex" / "sessions" / day.strftime("%Y/%m/%d")
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"rollout-{stamp}-{self.id}.jsonl"
        self.totals = dict.fromkeys(("input", "cached", "output", "reasoning"), 0)
        cwd = f"/home/demo/{PROJECT}"
        self._append(now, "session_meta", {"id": self.id, "timestamp": _iso(now), "cwd": cwd,
                                           "originator": "codex_exec", "cli_version": "0.171.0",
                                           "model_provider": "openai"})  # fmt: skip
        self._append(now, "turn_context", {"cwd": cwd, "model": self.MODEL})

    def _append(self, at: float, kind: str, payload: dict) -> None:
        with self.path.open("a") as out:
            out.write(_line({"timestamp": _iso(at), "type": kind, "payload": payload}))

    def respond(self, at: float, fresh: int, cached: int, output: int, reasoning: int) -> None:
        last = {"input_tokens": fresh + cached, "cached_input_tokens": cached,
                "output_tokens": output, "reasoning_output_tokens": reasoning,
                "total_tokens": fresh + cached + output}  # fmt: skip
        for key, value in (("input", fresh + cached), ("cached", cached), ("output", output),
                           ("reasoning", reasoning)):  # fmt: skip
            self.totals[key] += value
        total = {"input_tokens": self.totals["input"],
                 "cached_input_tokens": self.totals["cached"],
                 "output_tokens": self.totals["output"],
                 "reasoning_output_tokens": self.totals["reasoning"],
                 "total_tokens": self.totals["input"] + self.totals["output"]}  # fmt: skip
        info = {"total_token_usage": total, "last_token_usage": last,
                "model_context_window": 258400}  # fmt: skip
        self._append(at, "event_msg", {"type": "token_count", "info": info})


class GeminiSession:
    """A chat log as Gemini CLI 0.61 writes it: a header line, then one line per message; a
    model reply carries its `tokens`."""

    MODEL = "gemini-2.5-flash"

    def __init__(self, root: Path, now: float):
        self.id = str(uuid.uuid4())
        folder = root / "gemini" / "tmp" / PROJECT / "chats"
        folder.mkdir(parents=True, exist_ok=True)
        # the project's folder, which Gemini CLI keeps beside its chats
        (folder.parent / ".project_root").write_text(f"/home/demo/{PROJECT}\n")
        stamp = datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H-%M")
        self.path = folder / f"session-{stamp}-{self.id[:8]}.jsonl"
        header = {"sessionId": self.id, "projectHash": uuid.uuid4().hex * 2,
                  "startTime": _iso(now), "lastUpdated": _iso(now), "kind": "main"}  # fmt: skip
        self.path.write_text(_line(header))

    def respond(self, at: float, fresh: int, cached: int, output: int, thoughts: int) -> None:
        tokens = {"input": fresh + cached, "output": output, "cached": cached,
                  "thoughts": thoughts, "tool": 0,
                  "total": fresh + cached + output + thoughts}  # fmt: skip
        reply = {"id": uuid.uuid4().hex, "timestamp": _iso(at), "type": "gemini", "content": "",
                 "tokens": tokens, "model": self.MODEL}  # fmt: skip
        with self.path.open("a") as out:
            out.write(_line(reply))


class OpenCodeStore:
    """OpenCode 1.18's database, the one table the readers use: a `message` row per model
    step, its JSON with the step's tokens and the cost OpenCode computed."""

    MODEL = "gpt-5"
    PRICE = (1.25, 10.0, 0.125)  # USD per million: input, output, cache read (OpenAI's page)

    def __init__(self, root: Path, now: float):
        folder = root / "opencode"
        folder.mkdir(parents=True, exist_ok=True)
        self.session = f"ses_{uuid.uuid4().hex[:26]}"
        self.db = sqlite3.connect(folder / "opencode.db", isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, "
            "time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL)"
        )

    def respond(self, at: float, fresh: int, cached: int, output: int, reasoning: int) -> None:
        millis = int(at * 1000)
        price_in, price_out, price_cached = self.PRICE
        cost = (fresh * price_in + (output + reasoning) * price_out + cached * price_cached) / 1e6
        data = {"role": "assistant", "mode": "build", "agent": "build",
                "path": {"cwd": f"/home/demo/{PROJECT}", "root": "/"}, "cost": cost,
                "tokens": {"total": fresh + cached + output + reasoning, "input": fresh,
                           "output": output, "reasoning": reasoning,
                           "cache": {"write": 0, "read": cached}},
                "modelID": self.MODEL, "providerID": "openai",
                "time": {"created": millis, "completed": millis + 900},
                "finish": "stop"}  # fmt: skip
        self.db.execute(
            "INSERT INTO message VALUES (?, ?, ?, ?, ?)",
            (f"msg_{uuid.uuid4().hex[:26]}", self.session, millis, millis + 900, json.dumps(data)),
        )


class OtherAgents:
    """One session of each agent; `step` adds one response to each."""

    def __init__(self, root: Path, seed: int = 1, now: float | None = None):
        start = time.time() if now is None else now
        self.rng = random.Random(seed)
        self.sessions = (CodexSession(root, start), GeminiSession(root, start),
                         OpenCodeStore(root, start))  # fmt: skip

    def step(self, now: float | None = None) -> None:
        at = time.time() if now is None else now
        for session in self.sessions:
            rng = self.rng
            session.respond(at, rng.randint(800, 3000), rng.randint(2000, 20000),
                            rng.randint(100, 900), rng.randint(0, 300))  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m agentwatch.demo.other_agents",
        description="Write Codex CLI, Gemini CLI and OpenCode sessions for the demo: one "
        "response per agent every --every seconds, until stopped.",
    )
    parser.add_argument("dir", type=Path, help="the demo's folder for the other agents")
    parser.add_argument("--every", type=float, default=10.0, help="seconds between responses")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    agents = OtherAgents(args.dir, args.seed)
    while not stopping:
        agents.step()
        deadline = time.monotonic() + args.every
        while not stopping and time.monotonic() < deadline:
            time.sleep(0.2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
