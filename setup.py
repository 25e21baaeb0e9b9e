"""Lists every package below `agentwatch/` (whose subfolders are committed symlinks to the
top-level folders, which setuptools follows), so a new sentinel package needs no entry here.
Everything else about the package is in pyproject.toml."""

from setuptools import Extension, find_namespace_packages, find_packages, setup

FOLDERS = ("core", "exporter", "sentinels", "controller", "cli", "demo", "rules", "systemd")
FOLDERS += ("grafana",)
DATA_FOLDERS = ("rules", "grafana")  # their subfolders hold data only: namespace packages

packages = ["agentwatch"]
for folder in FOLDERS:
    packages.append(f"agentwatch.{folder}")
    where = f"agentwatch/{folder}"
    found = find_namespace_packages(where) if folder in DATA_FOLDERS else find_packages(where)
    packages += [f"agentwatch.{folder}.{name}" for name in found if "__pycache__" not in name]

# The token ledger's per-line fast path in C (the Python references run without it;
# tests/test_fastline.py fails when it is missing, so CI always has it).
FASTLINE = Extension(
    "agentwatch.sentinels.token_ledger._fastline",
    ["agentwatch/sentinels/token_ledger/_fastline.c"],
    extra_compile_args=["-O2"],
    optional=True,
)

# The Codex reader's line finder in C (codex.py has the same loop in Python; the
# conformance tests fail when it is missing).
CODEXSCAN = Extension(
    "agentwatch.sentinels.agent_ledger._codexscan",
    ["agentwatch/sentinels/agent_ledger/_codexscan.c"],
    extra_compile_args=["-O2"],
    optional=True,
)

# The OpenCode reader's reader of a common message row in C (opencode._common after
# orjson is the same in Python; tests/agents/test_opencode_paths.py fails when it is missing).
OPENCODESCAN = Extension(
    "agentwatch.sentinels.agent_ledger._opencodescan",
    ["agentwatch/sentinels/agent_ledger/_opencodescan.c"],
    extra_compile_args=["-O2"],
    optional=True,
)

# The Gemini CLI reader's line picker in C (gemini.py has the same filter in Python; the
# conformance tests fail when it is missing).
GEMINISCAN = Extension(
    "agentwatch.sentinels.agent_ledger._geminiscan",
    ["agentwatch/sentinels/agent_ledger/_geminiscan.c"],
    extra_compile_args=["-O2"],
    optional=True,
)

setup(packages=packages, ext_modules=[FASTLINE, CODEXSCAN, OPENCODESCAN, GEMINISCAN])
