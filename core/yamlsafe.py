"""YAML for files a user (or an attacker with the same uid) can write: bounded nesting and
bounded alias expansion.

`yaml.safe_load` constructs no objects, but it still lets a 100k-deep document exhaust the
recursion limit (a 199 KB traceback) and a billion-laughs document of a few hundred bytes
expand, through aliases, into a value that takes gigabytes to print or to turn into a string.
`load` composes the document with a depth limit and measures its size with every alias
expanded (without expanding it) before constructing anything; either limit is a `YamlRefused`
with a short message, which callers turn into their own config error.
"""

from __future__ import annotations

from typing import Any

import yaml

MAX_DEPTH = 64  # the deepest real config is 5 levels
MAX_EXPANDED = 4 * 1024 * 1024  # characters of scalars plus nodes, aliases expanded


class YamlRefused(ValueError):
    """A document over a limit; the message says which, never quoting the content."""


class _BoundedLoader(yaml.SafeLoader):
    def __init__(self, stream: str):
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise YamlRefused(f"YAML nested deeper than {MAX_DEPTH} levels")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def compose_document(self) -> Any:
        node = super().compose_document()
        if node is not None:
            _expanded_size(node, {})
        return node


def _expanded_size(node: yaml.Node, sizes: dict[int, int]) -> int:
    """The size of `node` with aliases expanded: each shared node is measured once and
    counted as often as it is used (a cycle counts as 0 the second time round)."""
    known = sizes.get(id(node))
    if known is not None:
        return known
    sizes[id(node)] = 0
    size = 1
    if isinstance(node, yaml.ScalarNode):
        size += len(node.value)
    elif isinstance(node, yaml.SequenceNode):
        size += sum(_expanded_size(item, sizes) for item in node.value)
    elif isinstance(node, yaml.MappingNode):
        size += sum(
            _expanded_size(key, sizes) + _expanded_size(value, sizes) for key, value in node.value
        )
    if size > MAX_EXPANDED:
        raise YamlRefused(f"YAML expands to more than {MAX_EXPANDED} characters through aliases")
    sizes[id(node)] = size
    return size


def load(text: str) -> Any:
    """Like `yaml.safe_load(text)`, within the limits; yaml.YAMLError on bad syntax."""
    loader = _BoundedLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()
