"""Maps the top-level folders into the `agentwatch` namespace (agentwatch.core, .sentinels, …)
and lists every package below them, so a new sentinel package needs no entry here. Everything
else about the package is in pyproject.toml."""

from setuptools import Extension, find_namespace_packages, find_packages, setup

FOLDERS = ("core", "exporter", "sentinels", "controller", "cli", "demo", "rules", "systemd")
FOLDERS += ("grafana",)
DATA_FOLDERS = ("rules", "grafana")  # their subfolders hold data only: namespace packages

packages = []
for folder in FOLDERS:
    packages.append(f"agentwatch.{folder}")
    found = find_namespace_packages(folder) if folder in DATA_FOLDERS else find_packages(folder)
    packages += [f"agentwatch.{folder}.{name}" for name in found if "__pycache__" not in name]

# The token ledger's per-line fast path in C (the Python references run without it;
# tests/test_fastline.py fails when it is missing, so CI always has it).
FASTLINE = Extension(
    "agentwatch.sentinels.token_ledger._fastline",
    ["sentinels/token_ledger/_fastline.c"],
    extra_compile_args=["-O2"],
    optional=True,
)

setup(
    packages=packages,
    package_dir={f"agentwatch.{folder}": folder for folder in FOLDERS},
    ext_modules=[FASTLINE],
)
