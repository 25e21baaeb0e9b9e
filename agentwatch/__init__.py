"""agentwatch: a Prometheus exporter and sentinels that watch AI coding agents.

The code lives in the checkout's top-level folders (core/, exporter/, sentinels/, ...); each
`agentwatch/<folder>` here is a committed relative symlink to `../<folder>`, so
`agentwatch.core` and the rest resolve from a plain checkout: `python -c 'import
agentwatch.core'` at its root, mypy run on the tree, an editor's go-to-definition. The wheel
is built from this folder and holds real files (docs/ARCHITECTURE.md, "Code map").
"""
