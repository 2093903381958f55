"""The traces under ../shared that the validation scripts run on (traces/ and pairs/)."""
import pathlib
import re

TRACE_SUFFIXES = (".json", ".json.gz", ".sqlite", ".sqlite.gz")


def trace_files(shared: pathlib.Path, one_rank_per_job: bool = False) -> list[pathlib.Path]:
    """Every trace file, sorted, without execution traces (et/, *_et.json.gz). With
    one_rank_per_job, the rank files of one job count once: the first of them."""
    files = [p for p in sorted(shared.rglob("*")) if p.is_file() and p.name.endswith(TRACE_SUFFIXES)]
    files = [p for p in files if "/et/" not in str(p) and not p.name.endswith("_et.json.gz")]
    if one_rank_per_job:
        files = first_rank_of_each_job(files)
    return files


def first_rank_of_each_job(files: list[pathlib.Path]) -> list[pathlib.Path]:
    """Keeps, of the files in one folder whose names differ only in their numbers (a job's ranks:
    worker0_step_12.<time>..., worker1_step_12.<time>...), the first in sorted order."""
    seen: set[tuple[pathlib.Path, str]] = set()
    kept = []
    for path in files:
        job = (path.parent, re.sub(r"[0-9]+", "#", path.name))
        if job not in seen:
            seen.add(job)
            kept.append(path)
    return kept
