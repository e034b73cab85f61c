"""`python -m bench.gpu_check` (`make gpu-check`): parse the command line, run every check, write the report."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import bench.gpu_check
from bench.gpu_check.driver import run_checks, run_settings, task_count
from bench.gpu_check.report import default_out, headline, report, write_report
from bench.gpu_check.settings import REPO, SHAPES
from kit.doctor.machine import probe_machine
from kit.doctor.processes import FAIL, PASS, SKIP, Driver, exit_code, exit_on_sigterm


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    summary = bench.gpu_check.__doc__.split("\n\n")[0]
    parser = argparse.ArgumentParser(prog="python -m bench.gpu_check", description=summary)
    parser.add_argument("--shape", choices=sorted(SHAPES), help="default: qwen2.5-1.5b with CUDA, tiny without")
    parser.add_argument("--steps", type=int, help="GRPO steps per run (default: 4 for qwen2.5-1.5b, 3 for tiny)")
    parser.add_argument("--rounds", type=int, help="runs of each GRPO side, alternated (default 2)")
    parser.add_argument("--generations", type=int, help="completions per step, one prompt (default 8 / 4)")
    parser.add_argument("--completion-length", type=int, help="max new tokens per completion (default 128 / 16)")
    parser.add_argument("--out", type=Path, help="the JSON report (default outputs/gpu-check-<time>.json)")
    args = parser.parse_args(argv)
    for name in ("steps", "rounds", "generations", "completion_length"):
        value = getattr(args, name)
        if value is not None and value < (2 if name == "generations" else 1):
            parser.error(f"--{name.replace('_', '-')} must be at least {2 if name == 'generations' else 1}")
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    started, out = time.perf_counter(), args.out or default_out()
    exit_on_sigterm()
    # the workers run in a scratch folder: they find this checkout's bench and kit through PYTHONPATH
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as tmp:  # models, adapters, logs: all gone at the end
        entry = [sys.executable, "-m", "bench.gpu_check.workers"]
        driver = Driver(Path(tmp), SHAPES["tiny"].timeout_s, 0, entry)
        machine = probe_machine(driver)
        shape = args.shape or ("qwen2.5-1.5b" if machine.cuda else "tiny")
        s = run_settings(args, shape)
        driver.total, driver.timeout_s = task_count(s), s.timeout_s
        print(headline(machine, shape, s, out), flush=True)
        if machine.driver_problem:
            print(f"gpu_check: note: {machine.driver_problem}", flush=True)
        checks, plans = run_checks(driver, machine, shape, s, Path(tmp))
    seconds = time.perf_counter() - started
    write_report(out, report(argv, seconds, shape, s, machine, plans, checks))
    counts = {status: sum(c.status == status for c in checks) for status in (PASS, FAIL, SKIP)}
    print(f"gpu_check: {counts[PASS]} passed, {counts[FAIL]} failed, {counts[SKIP]} skipped in {seconds:.0f} s; "
          f"figures in {out}")
    return exit_code(checks)


if __name__ == "__main__":
    sys.exit(main())
