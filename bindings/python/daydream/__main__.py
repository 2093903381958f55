"""`python -m daydream ARGS...` runs the daydream command line (the same code as the `daydream`
program, compiled into daydream._core): `python -m daydream predict trace.json.gz --scenario amp`."""

import signal
import sys

from . import _core


def main(argv=None) -> int:
    """Runs the command line on argv (default sys.argv[1:]) and returns its exit status."""
    if not hasattr(_core, "_run_cli"):
        print("error: this daydream was built without its command line (DAYDREAM_BUILD_CLI=OFF)", file=sys.stderr)
        return 1
    args = sys.argv[1:] if argv is None else list(argv)
    return _core._run_cli(["daydream", *args])


if __name__ == "__main__":
    # Ctrl-C stops a long sweep as it stops the `daydream` program: the C++ code never returns to
    # Python to see a KeyboardInterrupt.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    sys.exit(main())
