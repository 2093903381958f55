"""The traces under ../shared that the validation scripts run on (traces/ and pairs/)."""
import pathlib

TRACE_SUFFIXES = (".json", ".json.gz", ".sqlite", ".sqlite.gz")


def trace_files(shared: pathlib.Path, one_rank_per_job: bool = False) -> list[pathlib.Path]:
    """Every trace file, sorted, without execution traces (et/, *_et.json.gz). With
    one_rank_per_job, the DLRM ranks (one job) count once: rank 0."""
    files = [p for p in sorted(shared.rglob("*")) if p.is_file() and p.name.endswith(TRACE_SUFFIXES)]
    files = [p for p in files if "/et/" not in str(p) and not p.name.endswith("_et.json.gz")]
    if one_rank_per_job:
        files = [p for p in files if not ("dlrm" in str(p.parent) and "rank_0" not in p.name and "rank0" not in p.name)]
    return files
