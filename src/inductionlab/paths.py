"""What stands at a path a user gave, for the messages that refuse it (docs/conventions.md#environment): a named
pipe, a socket or a device is said to be one, not "does not exist"."""

from __future__ import annotations

import os
import stat


def what_is(path: os.PathLike | str) -> str:
    """What stands at ``path`` for a message when it is no regular file or folder ("" when it is one)."""
    if not os.path.exists(path):
        return "is a broken link" if os.path.lexists(path) else "does not exist"
    mode = os.stat(path).st_mode
    kind = stat.S_ISFIFO(mode), stat.S_ISSOCK(mode), stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
    return next((t for t, k in zip(("is a named pipe (FIFO)", "is a socket", "is a device"), kind) if k), "")
