#!/usr/bin/env python3
"""ctest helper: install daydream into a fresh virtual environment, then use it from outside the
source tree (import, the `daydream` CLI, `python -m daydream`, the collector's path).

    pip_install_check.py from-build BUILD_DIR WORK_DIR   (python_package_install, seconds)
        `cmake --install BUILD_DIR --component python` into the venv: the package as this CMake
        build made it, no second build.
    pip_install_check.py clean SOURCE_DIR WORK_DIR       (python_pip_install_clean, label clean_install)
        `pip install .` of a clean copy of the source tree (what git tracks, or the tree without
        build folders): configure, build with Ninja on every core, install; then the wheel's
        metadata (numpy and pandas required, matplotlib in the `plot` extra).

Both use --system-site-packages, so numpy, pandas and the build tools (scikit-build-core,
pybind11, ninja; the README's commands install them) come from this Python: nothing is
downloaded. DAYDREAM_EXPECT_COLLECTOR=1 asks that the package carries libdaydream_cupti.so.
"""
import os
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path


def run(cmd, **kwargs):
    print("+", " ".join(str(c) for c in cmd), flush=True)
    return subprocess.run([str(c) for c in cmd], check=True, **kwargs)


def fresh_venv(work: Path) -> Path:
    venv = work / "venv"
    shutil.rmtree(venv, ignore_errors=True)
    run([sys.executable, "-m", "venv", "--system-site-packages", venv])
    return venv


def clean_env() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def install_from_build(build: Path, work: Path) -> Path:
    venv = fresh_venv(work)
    site = Path(sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)}))
    run(["cmake", "--install", build, "--component", "python", "--prefix", venv])
    if not (site / "daydream" / "__init__.py").exists():
        sys.exit(f"cmake --install put no daydream package in {site} (DAYDREAM_PYTHON_INSTALL_DIR of {build} "
                 f"is not lib/pythonX.Y/site-packages)")
    return venv


def clean_copy(source: Path, dest: Path) -> Path:
    """The source tree as a fresh clone would have it: git's tracked and untracked-not-ignored files,
    or (no git) the tree without build folders."""
    shutil.rmtree(dest, ignore_errors=True)
    listed = subprocess.run(["git", "-C", str(source), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            capture_output=True)
    if listed.returncode == 0 and listed.stdout:
        for name in filter(None, listed.stdout.decode().split("\0")):
            if (source / name).is_file():
                (dest / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source / name, dest / name)
    else:
        shutil.copytree(source, dest, ignore=shutil.ignore_patterns("build", "build-*", ".git", "__pycache__"))
    return dest


def pip_install_clean(source: Path, work: Path) -> Path:
    missing = [m for m in ("scikit_build_core", "pybind11") if not _importable(m)]
    if missing:
        sys.exit(f"missing for {sys.executable}: {', '.join(missing)} (python3 -m pip install scikit-build-core pybind11)")
    if not shutil.which("ninja") and not _importable("ninja"):
        sys.exit("no ninja: pip builds daydream with Ninja (apt-get install ninja-build, or python3 -m pip install ninja)")
    tree = clean_copy(source, work / "src")
    venv = fresh_venv(work)
    env = clean_env()
    env.pop("CMAKE_BUILD_PARALLEL_LEVEL", None)  # Ninja's own default: every core
    start = time.monotonic()
    # No --no-deps: pip must find numpy and pandas (the package's requirements) already installed.
    run([venv / "bin" / "python", "-m", "pip", "install", "--no-build-isolation", "--no-index", tree], env=env)
    print(f"clean pip install took {time.monotonic() - start:.0f} s", flush=True)
    check_metadata(venv)
    return venv


def check_metadata(venv: Path) -> None:
    code = ("import importlib.metadata as m\n"
            "print('\\n'.join(m.requires('daydream') or []))\n")
    requires = run([venv / "bin" / "python", "-c", code], env=clean_env(), capture_output=True, text=True).stdout
    print("requires:", requires.replace("\n", "; "))
    lines = [line.replace(" ", "") for line in requires.splitlines()]
    for needed in ("numpy", "pandas", 'matplotlib;extra=="plot"'):
        if needed not in lines:
            sys.exit(f"the wheel's metadata does not require {needed!r}: {lines}")


def check_outside(venv: Path, source: Path, work: Path, with_program: bool) -> None:
    """Import daydream, simulate, run `python -m daydream` (and the `daydream` program) from a
    scratch folder with no PYTHONPATH."""
    env = clean_env()
    outside = work / "outside"
    outside.mkdir(exist_ok=True)
    python = venv / "bin" / "python"
    example = source / "tests" / "data" / "example" / "synthetic_training.json.gz"
    expect_collector = os.environ.get("DAYDREAM_EXPECT_COLLECTOR") == "1"
    check = (
        "import pathlib, daydream\n"
        "here = pathlib.Path(daydream.__file__).resolve()\n"
        f"assert pathlib.Path({str(venv)!r}).resolve() in here.parents, here\n"
        "assert (here.parent / 'py.typed').exists() and (here.parent / '_core.pyi').exists()\n"
        f"g = daydream.load({str(example)!r})\n"
        "g.select(kind='kernel').scale(0.5)\n"
        "collector = daydream.collector.library_path()\n"
        f"assert (collector is not None) == {expect_collector}, collector\n"
        "assert collector is None or pathlib.Path(collector).parent.parent == here.parent, collector\n"
        "print('imported', here, '-', len(g), 'tasks,', g.simulate().iteration_times_ms, '- collector', collector)\n"
    )
    run([python, "-c", check], cwd=outside, env=env)
    commands = [[python, "-m", "daydream"]] + ([[venv / "bin" / "daydream"]] if with_program else [])
    for command in commands:
        out = run(command + ["--help"], cwd=outside, env=env, capture_output=True, text=True).stdout
        if "replay" not in out or "stats" not in out:
            sys.exit(f"{' '.join(map(str, command))} --help does not list the commands:\n{out}")
        run(command + ["replay", example], cwd=outside, env=env)
        status = subprocess.run([str(c) for c in command + ["rplay"]], cwd=outside, env=env,
                                capture_output=True, text=True)
        if status.returncode != 1 or "did you mean 'replay'" not in status.stderr:
            sys.exit(f"a misspelt command: exit {status.returncode}, stderr {status.stderr!r}")


def main(mode: str, path: Path, work: Path) -> int:
    work.mkdir(parents=True, exist_ok=True)
    source = Path(__file__).resolve().parents[2]
    if mode == "from-build":
        venv = install_from_build(path, work)
        check_outside(venv, source, work, with_program=False)
        print("installed from the CMake build: package and `python -m daydream` work outside the source tree")
    else:
        venv = pip_install_clean(path, work)
        check_outside(venv, path, work, with_program=True)
        print("clean pip install: package, `daydream` and `python -m daydream` work outside the source tree")
    return 0


def _importable(module: str) -> bool:
    import importlib.util
    return importlib.util.find_spec(module) is not None


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in ("from-build", "clean"):
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], Path(sys.argv[2]).resolve(), Path(sys.argv[3]).resolve()))
