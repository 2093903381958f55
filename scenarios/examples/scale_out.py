"""scale_out in Python: the twin of the built-in (scenarios/scale_out.cpp). A job graph replicated to
`ranks` ranks (data parallel), its collectives re-costed for them with the model fitted to the
traced ones; past gpus_per_machine ranks a collective also crosses the `inter` link (a ring is as
fast as its slowest link). docs/scenarios/scale_out.md.

    import daydream, scale_out
    job = daydream.load("traces/")  # one trace per rank
    scale_out.apply(job, ranks=64)
"""

from network import job_link, recost

NAME = "scale_out"
CASES = {"ranks=64,inter=10Gbps": {"ranks": 64, "inter": 1.25e9}}


def apply(graph, ranks: int = 16, gpus_per_machine="auto", inter: float = 12.5e9, bandwidth="auto",
          latency="auto") -> None:
    _, traced, fitted, wanted = job_link(graph, latency, bandwidth)
    world_size = graph.job_layout()["world_size"]
    per_machine = world_size if gpus_per_machine == "auto" else gpus_per_machine
    if ranks > per_machine:
        wanted = (wanted[0], max(wanted[1], 1e9 / inter))
    graph.replicate_ranks(ranks)
    # As the built-in does: the traced cost too is taken for `ranks` participants, so the delta
    # holds the link change but not the growth of the traffic factor 2(n-1)/n (see the notes).
    recost(graph, graph.job_collectives(), ranks, fitted, wanted, ranks)
