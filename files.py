"""Input files: why a path given as a file cannot be read as one, in words for a one-line error.

Every reader of user files (platform, workload and scenario TOML, tables, EFG JSON and SQLite profiles,
vectors) asks :func:`file_problem` before opening its path, so that a missing file, a directory, a
dangling link or a FIFO (which would block the read forever) reads the same way everywhere:
``PATH: is a directory, not a file``.  The callers raise their own package's user error with it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def file_problem(path: str | os.PathLike) -> str | None:
    """None when ``path`` is a regular file this process may read; else what is wrong, in a few words."""
    p = Path(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        return "is a dangling symbolic link" if os.path.islink(p) else "no such file"
    except NotADirectoryError:
        return "no such file (a part of the path is a file, not a directory)"
    except PermissionError:
        return "permission denied"
    except (OSError, ValueError) as exc:                # ENAMETOOLONG, ELOOP, a NUL byte in the name
        return f"cannot be opened ({getattr(exc, 'strerror', None) or exc})"
    if stat.S_ISDIR(st.st_mode):
        return "is a directory, not a file"
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file (a device, FIFO or socket)"
    if not os.access(p, os.R_OK):
        return "permission denied"
    return None
