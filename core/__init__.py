"""The core every other part of agentwatch builds on; it imports no other agentwatch package."""


def __getattr__(name: str) -> str:
    """`__version__`, looked up only when asked for: importlib.metadata costs every command
    about 50 ms at start, and most never print a version."""
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("agentwatch")
    except PackageNotFoundError:  # running from a source tree without install
        return "0.0.0+unknown"
