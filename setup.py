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

# The fast paths in C, one small file each; every one is optional (a Python path does the
# same work) and a test fails when it is missing, so CI always has them:
# the token ledger's per-line parser (tests/test_fastline.py), the Codex, OpenCode and
# Gemini CLI readers' line finders and row readers (their conformance and path tests) and
# the agent ledger's key hash (tests/agents/test_agent_ledger_store.py). Two of them share
# BLAKE2b from sentinels/_blake2b.h.
C_FILES = (
    "sentinels/token_ledger/_fastline.c",
    "sentinels/agent_ledger/_codexscan.c",
    "sentinels/agent_ledger/_opencodescan.c",
    "sentinels/agent_ledger/_geminiscan.c",
    "sentinels/agent_ledger/_keyhash.c",
)
extensions = [
    Extension(
        "agentwatch." + path.removesuffix(".c").replace("/", "."),
        [f"agentwatch/{path}"],
        depends=["agentwatch/sentinels/_blake2b.h"],
        extra_compile_args=["-O2"],
        optional=True,
    )
    for path in C_FILES
]

setup(packages=packages, ext_modules=extensions)
