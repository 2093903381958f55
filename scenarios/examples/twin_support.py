"""What the Python twins share: C's rounding, and a snapshot of each unit's tasks to slice by time."""
import bisect
import math


def llround(x: float) -> int:
    """C's llround: halves away from zero, as the built-ins round (Python's round() rounds them to
    even, which would move a duration by 1 ns now and then)."""
    whole = math.floor(x)
    return whole + 1 if x - whole >= 0.5 else whole


class UnitTasks:
    """Each unit's live tasks in recorded order (Graph.tasks_by_unit), taken once: later changes
    to the graph do not show (a removed task stays listed; check Task.removed)."""

    def __init__(self, graph):
        self.by_unit = graph.tasks_by_unit()
        self._starts = {unit: [t.recorded_start_ns for t in tasks] for unit, tasks in self.by_unit.items()}

    def starting_in(self, unit, start_ns, end_ns):
        """The unit's tasks whose recorded start lies in [start_ns, end_ns), as the C++ tasks_in."""
        starts = self._starts[unit]
        return self.by_unit[unit][bisect.bisect_left(starts, start_ns):bisect.bisect_left(starts, end_ns)]
