"""Maps the top-level folders into the `agentwatch` namespace (agentwatch.core, .sentinels, …)
and lists every package below them, so a new sentinel package needs no entry here. Everything
else about the package is in pyproject.toml."""

from setuptools import find_packages, setup

FOLDERS = ("core", "exporter", "sentinels", "controller", "cli", "demo", "rules", "systemd")
FOLDERS += ("grafana",)

packages = []
for folder in FOLDERS:
    packages.append(f"agentwatch.{folder}")
    packages += [f"agentwatch.{folder}.{name}" for name in find_packages(folder)]

setup(packages=packages, package_dir={f"agentwatch.{folder}": folder for folder in FOLDERS})
