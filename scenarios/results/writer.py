"""Output that never destroys what whatif did not write: results directories and single output files.

A results directory is staged in a hidden directory next to the target and moved into place only when
the whole run succeeded, so an interrupted or failed run never leaves a directory that looks complete.
What may be at the target (checked before any work, :func:`check_results_target`, and again at the
moment of the move):

* nothing -- the staged directory is renamed into place;
* an empty directory, or a results directory whatif wrote (``manifest.json`` with the
  :data:`RESULTS_FORMAT` marker, and no entry that the manifest does not list) -- replaced atomically
  (``renameat2(RENAME_EXCHANGE)`` on Linux, so there is no moment without a target; elsewhere a
  rename to a hidden backup first);
* anything else -- a regular file, a directory holding a file whatif did not write, the working
  directory or one of its parents -- is refused with one line (:class:`ScenarioError`, exit 2), and
  nothing is touched.

Staging names carry the writing process's pid and start time (``.NAME.whatif-PID-START-RANDOM``), so a
later run of the same target recognises the leftovers of runs that were killed (``kill -9``, power
loss) and removes them -- or, where a kill struck between the two renames of the backup fallback and
left no target, puts the earlier results back; wave-1 whatif's leftovers (``.NAME.tmp-*``,
``.NAME.old-PID``) go the same way.  Single output files (traces) go through the same
staging names and a rename; an existing file is replaced only when ``is_ours`` recognises it.
"""

from __future__ import annotations

import ctypes
import io
import json
import os
import re
import secrets
import shutil
import sys
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

if TYPE_CHECKING:                    # (imported where used: a refused scenario fails before pandas loads)
    import pandas as pd

from whatif.scenarios.errors import ScenarioError

# ``--csv`` of any command: every table of the results directory also as CSV.  A context variable, so
# that the option reaches the writer without passing through every command's and study's signature.
CSV_TABLES: ContextVar[bool] = ContextVar("csv_tables", default=False)


@contextmanager
def tables_as_csv(enabled: bool) -> Iterator[None]:
    """Within the block, results directories also write their tables as CSV (when ``enabled``)."""
    token = CSV_TABLES.set(bool(enabled))
    try:
        yield
    finally:
        CSV_TABLES.reset(token)

MANIFEST = "manifest.json"
RESULTS_FORMAT = 1                   # manifest["whatif_results"]: the layout version of a results directory
# Files a wave-1 results directory (manifest without a file list) could hold.
_LEGACY_SUFFIXES = (".parquet", ".csv", ".png", ".json", ".html")
_RENAME_EXCHANGE = 2                 # linux/fs.h


# ----------------------------------------------------------------------------------------- JSON
def _json_default(obj: Any) -> Any:
    import numpy as np

    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


def to_json(obj: Any, indent: int | None = 2) -> str:
    """JSON text for results documents: numpy scalars and arrays become plain numbers and lists."""
    return json.dumps(obj, indent=indent, default=_json_default, allow_nan=True)


# ------------------------------------------------------------------------------ staging names
def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (Linux), which tells a pid's reuse apart."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return None


def _alive(pid: int, start: str) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass                                      # someone else's process: alive
    now = _start_time(pid)
    return now is None or start == "x" or now == start


def _staging_name(name: str, kind: str) -> str:
    pid = os.getpid()
    return f".{name}.whatif-{kind}-{pid}-{_start_time(pid) or 'x'}-{secrets.token_hex(4)}"


def _staging_pattern(name: str) -> re.Pattern:
    return re.compile(r"\." + re.escape(name) + r"\.whatif-(stage|old)-(\d+)-(\d+|x)-[0-9a-f]{8}")


def _legacy_pattern(name: str) -> re.Pattern:
    # what wave-1 whatif left: staging ".NAME.tmp-XXXXXXXX" (mkdtemp, no pid), backups ".NAME.old-PID"
    # and single files' ".NAME.XXXXXXXX.tmp" (mkstemp)
    return re.compile(r"\." + re.escape(name) + r"\.(?:tmp-[A-Za-z0-9_]{8}|(old)-(\d+)|[A-Za-z0-9_]{8}\.tmp)")


_ANY_STAGING = re.compile(r"\.(.+)\.whatif-(?:stage|old)-(\d+)-(\d+|x)-[0-9a-f]{8}")


def staged_entries(directory: Path) -> list[tuple[str, Path, bool]]:
    """What whatif runs staged in ``directory`` and did not move into place: (the target's name, the staging
    entry, whether the run that made it is still running), by name."""
    out = []
    for entry in sorted(os.listdir(directory)):
        m = _ANY_STAGING.fullmatch(entry)
        if m is not None:
            out.append((m.group(1), directory / entry, _alive(int(m.group(2)), m.group(3))))
    return out


def clean_leftovers(target: Path) -> list[Path]:
    """Remove what killed runs of ``target`` left next to it; returns what was removed or restored.

    A backup left by a kill between the two renames of the fallback replace, when the target is
    missing, is put back: the earlier results reappear rather than vanish."""
    pattern = _staging_pattern(target.name)
    parent = target.parent
    handled: list[Path] = []
    try:
        entries = sorted(os.listdir(parent))
    except OSError:
        return handled
    legacy = _legacy_pattern(target.name)
    for entry in entries:
        m = pattern.fullmatch(entry)
        if m is not None:
            kind, dead = m.group(1), not _alive(int(m.group(2)), m.group(3))
        elif (old := legacy.fullmatch(entry)) is not None:
            kind = "old" if old.group(1) else "stage"
            dead = kind == "stage" or not _alive(int(old.group(2)), "x")
        else:
            continue
        if not dead:
            continue
        path = parent / entry
        if kind == "old" and not os.path.lexists(target):
            os.rename(path, target)
        elif path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        handled.append(path)
    return handled


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# ----------------------------------------------------------------------------- room on the disk
def check_room(directory: str | os.PathLike, nbytes: int, what: str) -> None:
    """Refuse (:class:`ScenarioError`) an output of ``nbytes`` that the file system of ``directory`` (which
    exists) has not the room for: checked before writing, so that a full disk refuses it in one line, not
    halfway through."""
    try:
        free = shutil.disk_usage(directory).free
    except OSError:
        return                                    # (the write itself then says what is wrong)
    if nbytes > free:
        raise ScenarioError(f"{what}: needs {_size(nbytes)}, and the file system of {directory} has {_size(free)} "
                            f"free; nothing written")


def _size(nbytes: int) -> str:
    return f"{nbytes:,} bytes" if nbytes < 10 ** 6 else f"{nbytes / 1e6:,.1f} MB"


def write_refused(what: str, exc: OSError) -> ScenarioError:
    """The one-line error of an output the system refused while it was written (the disk filled meanwhile, a
    quota, an I/O error), once the caller has removed what it staged."""
    return ScenarioError(f"{what}: could not be written ({exc.strerror or exc}); nothing written")


# ----------------------------------------------------------------------------- single files
class _StagedFile:
    """The staged file :func:`atomic_file` yields: writes (and seeks) whose refusal by the system -- a full
    disk -- is one line naming the output; anything else that goes wrong in the block is the caller's."""

    def __init__(self, fh, what: str):
        self._fh, self._what = fh, what

    def write(self, data) -> None:
        try:
            self._fh.write(data)
        except OSError as exc:
            raise write_refused(self._what, exc) from None

    def seek(self, pos: int) -> None:
        self._fh.seek(pos)


@contextmanager
def atomic_file(path: str | os.PathLike, is_ours: Callable[[Path], bool] | None = None,
                nbytes: int | None = None) -> Iterator[_StagedFile]:
    """A binary file written through a staged file next to ``path`` and renamed over it when the block ends
    without an error (removed if it raises): an output written as it is made is never held in memory.

    An existing ``path`` is replaced only when ``is_ours(path)`` says whatif wrote it (without ``is_ours``:
    always -- for files inside a staged results directory); anything else raises :class:`ScenarioError` and
    nothing is written.  ``nbytes``, when the size is known, is checked against the free space first."""
    path = Path(path)
    if is_ours is not None:
        check_output_file(path, is_ours)
    path.parent.mkdir(parents=True, exist_ok=True)
    if is_ours is not None:
        clean_leftovers(path)
    if nbytes is not None:
        check_room(path.parent, nbytes, str(path))
    tmp = path.parent / _staging_name(path.name, "stage")
    try:
        with open(tmp, "xb") as fh:
            yield _StagedFile(fh, str(path))
            try:
                fh.flush()
                os.fsync(fh.fileno())
            except OSError as exc:
                raise write_refused(str(path), exc) from None
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: str | os.PathLike, data: bytes,
                       is_ours: Callable[[Path], bool] | None = None) -> None:
    """Write ``data`` to ``path`` through :func:`atomic_file`."""
    with atomic_file(path, is_ours, len(data)) as fh:
        fh.write(data)


def atomic_write_text(path: str | os.PathLike, text: str, is_ours: Callable[[Path], bool] | None = None) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), is_ours)


def check_output_file(path: Path, is_ours: Callable[[Path], bool]) -> None:
    """Refuse an output file path that holds a directory or a file whatif did not write."""
    if os.path.islink(path) and not path.exists():
        raise ScenarioError(f"{path}: is a dangling symbolic link; name a new file")
    if path.is_dir():
        raise ScenarioError(f"{path}: is a directory; name a file")
    if path.exists() and not is_ours(path):
        raise ScenarioError(f"{path}: exists and was not written by whatif; refusing to replace it "
                            f"(name a new file, or move it away)")


# ----------------------------------------------------------------------- results directories
def read_manifest(directory: Path) -> dict | None:
    """The manifest of a results directory whatif wrote, or None."""
    try:
        doc = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if not isinstance(doc, dict):
        return None
    if doc.get("whatif_results") == RESULTS_FORMAT and isinstance(doc.get("files"), list):
        return doc
    if "whatif_version" in doc and "created_utc" in doc and "files" not in doc:
        return doc                                # wave 1: no file list, judged by suffix below
    return None


def _foreign_entry(directory: Path, manifest: dict) -> str | None:
    """The first entry of ``directory`` that its manifest does not account for, or None."""
    listed = manifest.get("files")
    for entry in sorted(os.listdir(directory)):
        path = directory / entry
        if path.is_symlink() or not path.is_file():
            return entry
        if listed is not None:
            if entry not in listed:
                return entry
        elif not entry.endswith(_LEGACY_SUFFIXES):
            return entry
    return None


def _check_can_create_in(directory: Path, name: str, out: str | os.PathLike) -> None:
    """Refuse a target whose directory does not take new entries (read-only, no permission, or a
    pseudo file system such as /proc, where even root's ``mkdir`` fails): the staging directory could not
    be made at the end of the run.  Probed with a staging directory of ``name`` made and removed at once
    (a kill in between leaves what :func:`clean_leftovers` removes)."""
    probe = directory / _staging_name(name, "stage")
    try:
        os.mkdir(probe, 0o700)
    except OSError as exc:
        raise ScenarioError(f"--out {out}: cannot create a directory in {directory} "
                            f"({exc.strerror or type(exc).__name__})") from None
    os.rmdir(probe)


def check_results_target(out: str | os.PathLike) -> Path:
    """Raise :class:`ScenarioError` unless whatif may write a results directory at ``out``; returns it
    resolved.  Touches nothing."""
    out = Path(out)
    if out.name in ("", ".", ".."):
        resolved = out.resolve()
    else:
        resolved = out.parent.resolve() / out.name
    if os.path.islink(resolved):
        raise ScenarioError(f"--out {out}: is a symbolic link; name a directory")
    if not os.path.lexists(resolved):
        ancestor = resolved.parent
        while not os.path.lexists(ancestor):
            ancestor = ancestor.parent
        if not ancestor.is_dir():
            raise ScenarioError(f"--out {out}: {ancestor} is a file, not a directory")
        _check_can_create_in(ancestor, resolved.relative_to(ancestor).parts[0], out)
        return resolved
    if not resolved.is_dir():
        raise ScenarioError(f"--out {out}: is an existing file, not a results directory; name a new directory")
    cwd = Path.cwd().resolve()
    if resolved == cwd or resolved in cwd.parents:
        raise ScenarioError(f"--out {out}: is the working directory or one of its parents; name a new directory")
    _check_can_create_in(resolved.parent, resolved.name, out)
    if not any(os.scandir(resolved)):
        return resolved
    manifest = read_manifest(resolved)
    if manifest is None:
        raise ScenarioError(f"--out {out}: is a directory that is not a whatif results directory (no whatif "
                            f"manifest.json); refusing to replace it -- name a new or empty directory")
    foreign = _foreign_entry(resolved, manifest)
    if foreign is not None:
        raise ScenarioError(f"--out {out}: holds {foreign!r}, which whatif did not write; refusing to replace "
                            f"the directory -- move it away or name another directory")
    return resolved


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths (Linux renameat2); False where the system cannot."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd = -100
    rc = renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), _RENAME_EXCHANGE)
    return rc == 0


class ResultsWriter:
    """Stage a results directory and move it into place only on success.

    Use as a context manager::

        with ResultsWriter(out_dir) as out:
            out.table("totals", df)
            out.json("results.json", doc)
            out.figure("cpi_stack", png_bytes)
        # out_dir now exists and is complete; on an exception nothing was written.

    ``files`` lists what was written, in order; :func:`~whatif.scenarios.results.directory.write_results_dir`
    puts that list into the manifest, by which a later run recognises the directory as whatif's.
    """

    def __init__(self, out_dir: str | os.PathLike, csv: bool = False):
        self.out_dir = Path(out_dir)
        self.csv = csv or CSV_TABLES.get()
        self._staging: Path | None = None
        self._target: Path | None = None
        self.files: list[str] = []

    # -- context management -------------------------------------------------
    def __enter__(self) -> "ResultsWriter":
        target = check_results_target(self.out_dir)
        target.parent.mkdir(parents=True, exist_ok=True)
        clean_leftovers(target)
        staging = target.parent / _staging_name(target.name, "stage")
        os.mkdir(staging, 0o777)
        self._staging, self._target = staging, target
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        staging, target = self._staging, self._target
        self._staging = None
        if staging is None:
            return
        if exc_type is not None:
            shutil.rmtree(staging, ignore_errors=True)
            return
        try:
            check_results_target(self.out_dir)        # a user may have put files there during the run
            self._move_into_place(staging, target)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise

    @staticmethod
    def _move_into_place(staging: Path, target: Path) -> None:
        if not os.path.lexists(target):
            os.rename(staging, target)
            return
        if _exchange(staging, target):
            shutil.rmtree(staging, ignore_errors=True)    # now holds the earlier results
            return
        backup = target.parent / _staging_name(target.name, "old")
        os.rename(target, backup)
        try:
            os.rename(staging, target)
        except BaseException:
            os.rename(backup, target)
            raise
        shutil.rmtree(backup, ignore_errors=True)

    @property
    def path(self) -> Path:
        """The staging directory while open (write here), for writers that need a raw path."""
        if self._staging is None:
            raise RuntimeError("ResultsWriter is not open; use it as a context manager")
        return self._staging

    # -- writers --------------------------------------------------------------
    def _record(self, name: str) -> Path:
        if "/" in name or "\\" in name or name.startswith("."):
            raise ValueError(f"results file name must be a plain visible name, got {name!r}")
        if name not in self.files:
            self.files.append(name)
        return self.path / name

    def bytes(self, name: str, data: bytes) -> Path:
        target = self._record(name)
        what = f"--out {self.out_dir}: {name}"
        check_room(self._target.parent, len(data), what)         # (where the staging directory is)
        try:
            with open(target, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())          # on disk before the directory is renamed into place
        except OSError as exc:                 # (__exit__ removes the staging directory)
            raise write_refused(what, exc) from None
        return target

    def text(self, name: str, text: str) -> Path:
        return self.bytes(name, text.encode("utf-8"))

    def json(self, name: str, obj: Any) -> Path:
        return self.text(name, to_json(obj) + "\n")

    def table(self, name: str, df: pd.DataFrame) -> Path:
        """Write ``df`` as ``name.parquet`` (and ``name.csv`` when CSV output was requested)."""
        buf = io.BytesIO()
        df.to_parquet(buf, index=False)
        target = self.bytes(f"{name}.parquet", buf.getvalue())
        if self.csv:
            self.text(f"{name}.csv", df.to_csv(index=False))
        return target

    def figure(self, name: str, png: bytes) -> Path:
        """Write PNG bytes (rendered once, by :func:`~whatif.scenarios.results.report.figure_png`) as
        ``name.png``."""
        if not isinstance(png, (bytes, bytearray)):
            raise TypeError(f"figure {name!r}: expected PNG bytes, got {type(png).__name__}")
        return self.bytes(f"{name}.png", bytes(png))
