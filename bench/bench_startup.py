"""The fixed cost of a short agentwatch command: the agent ledger's `--once` on an empty
Codex folder, a whole process, against ccusage's run on the same empty folder, in pairs.

    python bench/bench_startup.py [--pairs 20] [--target-ms 50]

The agent-ledger benches compare our whole process with `ccusage codex daily` (0.3 s of CPU
for its whole run on 256 MiB), so what our command pays before it reads a byte counts
(issue 29): the interpreter, the imports, the config, the command line, the database and the
spool file. Each pair runs, with a fresh state folder,

- ours: `agentwatch --config C sentinel agent-ledger --once --state-dir D --spool-dir D`,
  C a JSON text in agentwatch.yaml as the agent benches write it, CODEX_HOME an empty folder;
- peer: `ccusage codex daily --json --offline` on the same empty CODEX_HOME;

and then `python -c pass` of the same interpreter is run as many times, for the floor under
both. Exit 1 when our median CPU is not below `--target-ms` (50 ms) or the median of the
per-pair CPU ratios passes 1.0; 2 when ccusage is missing.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

from agent_bench import default_ccusage
from pairs import (
    Check,
    main_guard,
    median_check,
    need_executable,
    ratio_check,
    run_command,
    run_pairs,
    spread_line,
    table,
    verdict,
)


def body() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=20, help="interleaved pairs (default 20)")
    parser.add_argument("--target-ms", type=float, default=50.0, help="our median CPU below")
    parser.add_argument("--target-cpu", type=float, default=1.0, help="max CPU ratio (1.0)")
    parser.add_argument("--ccusage", default=default_ccusage(), help="the ccusage command")
    parser.add_argument(
        "--agentwatch",
        default=str(Path(sys.executable).parent / "agentwatch"),
        help="the agentwatch command (default: next to this Python)",
    )
    parser.add_argument("--out", type=Path, help="write the samples and verdicts as JSON")
    args = parser.parse_args()
    ccusage = need_executable(args.ccusage, "ccusage", "run scripts/setup --test or --ccusage")
    agentwatch = need_executable(args.agentwatch, "agentwatch", "pip install -e . or --agentwatch")
    with tempfile.TemporaryDirectory(prefix="agentwatch-startup-") as folder:
        base = Path(folder)
        (base / "codex").mkdir()
        config = base / "agentwatch.yaml"
        config.write_text(json.dumps({"sentinels": {"agent-ledger": {"agents": ["codex"]}}}))
        run = base / "run"
        env = {"PATH": "/usr/bin:/bin", "HOME": str(base), "TZ": "UTC"}
        env["CODEX_HOME"] = str(base / "codex")
        ours_cmd = [agentwatch, "--config", str(config), "sentinel", "agent-ledger", "--once"]
        ours_cmd += ["--state-dir", str(run / "state"), "--spool-dir", str(run / "spool")]
        theirs_cmd = [ccusage, "codex", "daily", "--json", "--offline"]
        floor_cmd = [sys.executable, "-c", "pass"]

        def ours() -> object:
            shutil.rmtree(run, ignore_errors=True)  # fresh state, as the agent benches
            return run_command(ours_cmd, env=env)

        print(f"ours:   {' '.join(ours_cmd)}\npeer:   {' '.join(theirs_cmd)}", flush=True)
        result = run_pairs(
            ("agentwatch", ours),  # type: ignore[arg-type]
            ("ccusage", lambda: run_command(theirs_cmd, env=env)),
            args.pairs,
            warmup=1,
            progress=False,
        )
        floor = [run_command(floor_cmd, env=env).cpu_s for _ in range(args.pairs)]
    print(table(result, ("wall_s", "cpu_s")))
    ours_cpu = [sample.cpu_s for sample in result.a]
    print(spread_line("agentwatch CPU", ours_cpu, "ms", 1000))
    print(spread_line("ccusage CPU", [sample.cpu_s for sample in result.b], "ms", 1000))
    print(spread_line(f"floor: {' '.join(floor_cmd)} CPU", floor, "ms", 1000))
    ours_ms = [x * 1000 for x in ours_cpu]
    checks: list[Check] = [
        median_check("agentwatch --once CPU, ms", ours_ms, args.target_ms, strict=True),
        ratio_check(result, "cpu_s", args.target_cpu),
    ]
    return verdict(checks, args.out, {"pairs": result.as_dict(), "floor_cpu_s": floor})


if __name__ == "__main__":
    sys.exit(main_guard(body))
