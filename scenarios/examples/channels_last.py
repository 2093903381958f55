"""channels_last in Python: the twin of the built-in (scenarios/channels_last.cpp). In
channels-last (NHWC) memory format cuDNN needs no layout conversions: the layout-transform
kernels disappear with the calls that launched only them. docs/scenarios/channels_last.md.

    import daydream, channels_last
    graph = daydream.load("trace.json.gz")
    channels_last.apply(graph)
"""

NAME = "channels_last"
# Other parameters the twin test checks: spec arguments -> apply() keywords.
CASES = {"pattern=(?i)elementwise": {"pattern": "(?i)elementwise"}}
LAYOUT_TRANSFORMS = "(?i)nchwToNhwc|nhwcToNchw|nchw2nhwc|nhwc2nchw"


def apply(graph, pattern: str = LAYOUT_TRANSFORMS) -> None:
    transforms = graph.select(kind="kernel", name=pattern)
    if len(transforms):
        graph.remove_with_launches(transforms)
