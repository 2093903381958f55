"""faster_gpu in Python: the twin of the built-in (scenarios/faster.cpp). What if the GPU were
`factor` times faster? Every GPU task of the chosen kind takes duration / factor; CPU work,
launch latencies, stream gaps and collectives keep their recorded times. docs/scenarios/faster_gpu.md.

    import daydream, faster_gpu
    graph = daydream.load("trace.json.gz")
    faster_gpu.apply(graph, factor=2)
"""

NAME = "faster_gpu"
# Other parameters the twin test checks: spec arguments -> apply() keywords.
CASES = {"kind=all,factor=4": {"kind": "all", "factor": 4.0}}
KINDS = {"kernel": ["kernel"], "memcpy": ["memcpy"], "memset": ["memset"], "all": ["kernel", "memcpy", "memset"]}


def apply(graph, factor: float = 2.0, kind: str = "kernel") -> None:
    if kind not in KINDS:
        raise ValueError(f"parameter 'kind' = '{kind}' is not a GPU task kind (valid: kernel, memcpy, memset, all)")
    graph.select(kind=KINDS[kind]).scale(1.0 / factor)
