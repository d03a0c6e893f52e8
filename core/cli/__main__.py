"""``python -m flowdbg.cli``."""

from __future__ import annotations

from flowdbg.cli import main

if __name__ == "__main__":
    main()
