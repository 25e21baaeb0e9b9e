"""The Messages API's answer shapes: a message, its SSE event stream, an error body.

Shapes as the API documents them and as Claude Code 2.1.328 reads them (message_start with
the id, model and input usage; content blocks; message_delta with the final output tokens;
message_stop); ids in the API's own forms (`msg_01…`, `toolu_01…`, `req_011…`).
"""

from __future__ import annotations

import json
import secrets
import string
from collections.abc import Iterator
from typing import Any

from agentwatch.demo.anthropic_api.script import Step

_ALPHABET = string.ascii_letters + string.digits


def new_id(prefix: str) -> str:
    return prefix + "".join(secrets.choice(_ALPHABET) for _ in range(24))


def content(step: Step) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if step.text:
        blocks.append({"type": "text", "text": step.text})
    if step.kind == "tool_use":
        blocks.append(
            {
                "type": "tool_use",
                "id": new_id("toolu_01"),
                "name": step.tool_name,
                "input": step.tool_input,
            }
        )
    return blocks


def stop_reason(step: Step) -> str:
    return "tool_use" if step.kind == "tool_use" else "end_turn"


def message(step: Step, message_id: str, model: str) -> dict[str, Any]:
    """A whole message, for a request without `stream`."""
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content(step),
        "stop_reason": stop_reason(step),
        "stop_sequence": None,
        "usage": step.usage.as_api(),
    }


def events(step: Step, message_id: str, model: str) -> Iterator[bytes]:
    """The SSE events of a streamed message, each ready to write."""
    usage = step.usage.as_api()
    start_usage = {**usage, "output_tokens": min(1, step.usage.output_tokens)}
    yield _event(
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": start_usage,
            },
        },
    )
    for index, block in enumerate(content(step)):
        start: dict[str, Any]
        if block["type"] == "text":
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        yield _event(
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": start},
        )
        yield _event(
            "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        )
        yield _event("content_block_stop", {"type": "content_block_stop", "index": index})
    yield _event(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason(step), "stop_sequence": None},
            "usage": {"output_tokens": step.usage.output_tokens},
        },
    )
    yield _event("message_stop", {"type": "message_stop"})


def error_body(error_type: str, message: str) -> bytes:
    payload = {"type": "error", "error": {"type": error_type, "message": message}}
    return json.dumps(payload).encode()


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()
