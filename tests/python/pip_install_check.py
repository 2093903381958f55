#!/usr/bin/env python3
"""ctest helper: `pip install` the project into a fresh virtual environment, then import daydream
from outside the source tree and run the installed `daydream` CLI.

    pip_install_check.py SOURCE_DIR WORK_DIR

The build uses --no-build-isolation: scikit-build-core and pybind11 must already be installed
for this Python (the README's commands pip-install them), so nothing is downloaded here. The
venv sees them through --system-site-packages. WORK_DIR keeps the CMake build folder between
runs, so a second run only rebuilds what changed.
"""
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path


def run(cmd, **kwargs):
    print("+", " ".join(str(c) for c in cmd), flush=True)
    return subprocess.run([str(c) for c in cmd], check=True, **kwargs)


def main(source: Path, work: Path) -> int:
    missing = [m for m in ("scikit_build_core", "pybind11") if not _importable(m)]
    if missing:
        print(f"missing for {sys.executable}: {', '.join(missing)} "
              "(python3 -m pip install scikit-build-core pybind11)")
        return 1
    work.mkdir(parents=True, exist_ok=True)
    venv = work / "venv"
    shutil.rmtree(venv, ignore_errors=True)
    start = time.monotonic()
    run([sys.executable, "-m", "venv", "--system-site-packages", venv])
    python = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    run([python, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-index",
         "--config-settings=build-dir=" + str(work / "build"), source], env=env)
    print(f"pip install took {time.monotonic() - start:.0f} s", flush=True)

    # Outside the source tree: a scratch folder as working directory, no PYTHONPATH.
    outside = work / "outside"
    outside.mkdir(exist_ok=True)
    example = source / "tests" / "data" / "example" / "synthetic_training.json.gz"
    check = (
        "import pathlib, sys, daydream\n"
        "here = pathlib.Path(daydream.__file__).resolve()\n"
        f"assert pathlib.Path({str(venv)!r}).resolve() in here.parents, here\n"
        "assert (here.parent / 'py.typed').exists() and (here.parent / '_core.pyi').exists()\n"
        f"g = daydream.load({str(example)!r})\n"
        "g.select(kind='kernel').scale(0.5)\n"
        "print('imported', here, '-', len(g), 'tasks,', g.simulate().iteration_times_ms)\n"
    )
    run([python, "-c", check], cwd=outside, env=env)
    cli = venv / "bin" / "daydream"
    out = run([cli, "--help"], cwd=outside, env=env, capture_output=True, text=True).stdout
    print(out)
    if "replay" not in out or "stats" not in out:
        print("the installed CLI's --help does not list its commands")
        return 1
    run([cli, "replay", example], cwd=outside, env=env)
    print("pip install: package and CLI work outside the source tree")
    return 0


def _importable(module: str) -> bool:
    import importlib.util
    return importlib.util.find_spec(module) is not None


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()))
