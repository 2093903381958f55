"""What the Python twins share: C's rounding."""
import math


def llround(x: float) -> int:
    """C's llround: halves away from zero, as the built-ins round (Python's round() rounds them to
    even, which would move a duration by 1 ns now and then)."""
    whole = math.floor(x)
    return whole + 1 if x - whole >= 0.5 else whole
