"""base.usage, the fast constructor readers may use, makes what AgentUsage(...) makes: the
same class, equal and hashed alike, still frozen, every field where the class puts it."""

from __future__ import annotations

import dataclasses
import math

import pytest

from agentwatch.sentinels.agent_ledger import base
from agentwatch.sentinels.agent_ledger.base import AgentUsage, usage

VALUES = [
    ("gemini", "k1", 1.7e9, "s", "p", "m", 1, 2, 3, 4),
    ("opencode", "k2", math.nan, "", "", "", 0, 0, 0, 0, 0.25),
    ("codex", "k3", -1.0, "sé", "p\\ud800", "m", 2**60, -1, True, 1.5, math.inf),
]


@pytest.mark.parametrize("values", VALUES)
def test_usage_is_the_class_made_record(values: tuple) -> None:
    made, fast = AgentUsage(*values), usage(*values)
    assert type(fast) is AgentUsage
    for field in dataclasses.fields(AgentUsage):
        assert getattr(fast, field.name) is getattr(made, field.name)
    assert fast == made and hash(fast) == hash(made)  # (the same NaN object is equal)
    assert fast.counts() == made.counts() and fast.total == made.total
    assert fast != usage(*values[:1], "other", *values[2:])
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.input = 5  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del fast.key  # type: ignore[misc]
    assert fast == dataclasses.replace(fast) and dataclasses.replace(fast, key="x").key == "x"


def test_usage_keeps_the_field_order_and_the_default() -> None:
    """A field added to or moved in AgentUsage must be added to usage too: the slots and
    the parameters follow the class's fields in order."""
    names = tuple(field.name for field in dataclasses.fields(AgentUsage))
    assert base._Unfrozen.__slots__ == names
    assert tuple(usage.__code__.co_varnames[: len(names)]) == names
    record = usage("a", "k", 1.0, "s", "p", "m", 1, 2, 3, 4)
    assert record.cost_usd is None and record == AgentUsage(
        "a", "k", 1.0, "s", "p", "m", 1, 2, 3, 4
    )
    assert usage(**{name: getattr(record, name) for name in names}) == record
