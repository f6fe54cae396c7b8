"""The ``liteload`` command installed by pip: the same program as the Rust binary."""

import signal
import sys


def main() -> None:
    """Run ``liteload`` with this process's arguments and exit with its status."""
    from ._liteload import cli

    # The command handles Ctrl-C itself (a load stops and leaves the database as it
    # was, exit 130); Python's handler would raise KeyboardInterrupt after it.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    sys.exit(cli(sys.argv))


if __name__ == "__main__":
    main()
