"""Generators the tests and the benchmarks share, kept out of the wheel: Claude Code, Gemini CLI
and OpenCode transcript trees (`corpus`, `gemini_corpus`, `opencode_corpus`) and process trees
named like agents (`processes`). A benchmark imports them as `generators.X` (its own folder is
on sys.path), a test as `bench.generators.X`."""
