"""A directory of live-point libraries (``whatif simulate --live-points DIR``): one library per configuration's
state key and sample design (:mod:`simulator.livepoints`), found by name, written once and never replaced.

    DIR/whatif-live-points.json           the store's marker
    DIR/<workload>-<platform>-<id>/       a library: livepoints.json and its .npy arrays

What may be at ``DIR``: nothing (the store is made when the first library is kept), an empty directory, or a
store whatif made (its marker); anything else -- a file, a directory holding other things -- is refused with
one line, and nothing is touched.  A library is written into a staging directory next to its name and renamed
into place when complete (a killed run leaves a staging directory that the next one removes, never a library
that looks complete); one that is there is read, not rewritten, and a damaged one is refused, not replaced.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterator

from whatif import __version__
from whatif.scenarios.errors import ScenarioError
from whatif.scenarios.results.writer import _staging_name, atomic_write_text, check_room, clean_leftovers, \
    staged_entries, write_refused
from whatif.simulator.livepoints import MANIFEST as LIVE_MANIFEST
from whatif.simulator.livepoints import DamagedLibrary, LivePoints, library_id, state_code

MARKER = "whatif-live-points.json"
STORE_FORMAT = 1


def _is_marker(path: Path) -> bool:
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("whatif_live_point_store") == STORE_FORMAT
    except (OSError, ValueError, UnicodeDecodeError, AttributeError):
        return False


class LivePointStore:
    """The store at ``path`` (checked now: a foreign file or directory raises :class:`ScenarioError`)."""

    def __init__(self, path: str | os.PathLike, label: str = "--live-points"):
        self.path = Path(path)
        self.label = label
        p = self.path
        if p.is_symlink() and not p.exists():
            raise ScenarioError(f"{label} {p}: is a dangling symbolic link")
        if p.exists():
            if not p.is_dir():
                raise ScenarioError(f"{label} {p}: is a file, not a directory of live-point libraries")
            if any(os.scandir(p)) and not _is_marker(p / MARKER):
                raise ScenarioError(f"{label} {p}: a directory whatif did not make as a live-point store (no "
                                    f"{MARKER}); name a new or empty directory")

    def name(self, key: str, design: dict, workload: str, platform: str) -> str:
        slug = re.sub(r"[^A-Za-z0-9_.+-]+", "_", f"{workload}-{platform}").strip("._")
        return f"{slug}-{library_id(key, design)}"

    def find(self, key: str, design: dict, workload: str, platform: str) -> tuple[LivePoints | None, dict]:
        """The library of this state key and design, with where it is and what captured it; (None, where) when
        the store has none."""
        where = {"path": self.path / self.name(key, design, workload, platform), "about": {}}
        if not where["path"].exists():
            return None, where
        try:
            library = LivePoints.load(where["path"])
        except ValueError as exc:
            raise self.refused(exc) from None
        if library.key != key or library.design != design:
            raise ScenarioError(f"{self.label} {where['path']}: holds another configuration's live-points")
        where["about"] = library.about
        return library, where

    def refused(self, exc: ValueError) -> ScenarioError:
        """The user's error for a library that cannot be replayed (``exc``: :meth:`LivePoints.load`'s, or a replay's
        :class:`~simulator.livepoints.DamagedLibrary` or :class:`~simulator.livepoints.ForeignLibrary`, naming it and
        what is wrong)."""
        return ScenarioError(f"{self.label}: {exc}; move it away to capture it again")

    @contextmanager
    def staging(self, key: str, design: dict, workload: str, platform: str) -> Iterator[Path]:
        """An empty staging directory next to the place of this key's and design's library (the store made if need
        be), for a capture to stream the library into (:func:`~simulator.livepoints.capture_sampled`'s ``into``)
        and :meth:`keep` to move into place.  Whatever is left of it when the block ends is removed; a write the
        system refused in the block (a full disk) is one line naming the library."""
        self.path.mkdir(parents=True, exist_ok=True)
        marker = self.path / MARKER
        if not marker.exists():
            atomic_write_text(marker, json.dumps({"whatif_live_point_store": STORE_FORMAT}) + "\n", _is_marker)
        target = self.path / self.name(key, design, workload, platform)
        clean_leftovers(target)
        stage = self.path / _staging_name(target.name, "stage")
        stage.mkdir()
        try:
            yield stage
        except OSError as exc:                            # (numpy's short write says so without an errno)
            raise write_refused(f"{self.label} {target}", exc) from None
        finally:
            shutil.rmtree(stage, ignore_errors=True)

    def keep(self, library: LivePoints, workload: str, platform: str, about: dict, stage: Path | None = None) -> dict:
        """Write ``library`` into the store (made if need be) -- completing ``stage``, the :meth:`staging` directory
        a capture streamed it into, if given -- and returns where it is.  Another process that kept the same
        library first wins: its copy stays, this one is dropped."""
        if stage is None:
            with self.staging(library.key, library.design, workload, platform) as stage:
                return self.keep(library, workload, platform, about, stage)
        target = self.path / self.name(library.key, library.design, workload, platform)
        check_room(self.path, max(0, library.nbytes - _bytes_under(stage)), f"{self.label} {target}")
        about = {**about, "whatif_version": __version__}
        library.save(stage, about)
        try:
            os.rename(stage, target)
        except OSError:
            if not target.exists():
                raise
        return {"path": target, "about": about}

    def libraries(self) -> list[dict]:
        """What the store holds, a dict per library (sorted by name) from its manifest, without mapping its arrays:
        name, workload and platform, the sample's design (U, W, n, S, ...), units, bytes on disk, the core and
        whatif version that captured it, and when (the manifest's time, UTC); a library whose manifest cannot be
        read is listed with ``damaged`` saying why; one captured by other code than this whatif's (its
        :func:`~simulator.livepoints.state_code`), which no run of this whatif finds, with ``stale``.  Raises
        :class:`ScenarioError` when there is no store."""
        self._check_store()
        out = []
        for entry in sorted(self.path.iterdir()):
            if entry.name.startswith(".") or not entry.is_dir():
                continue                                  # the marker, staging directories of running captures
            row: dict = {"name": entry.name, "bytes": _bytes_under(entry)}
            try:
                doc = json.loads((entry / LIVE_MANIFEST).read_text(encoding="utf-8"))
                about, design = dict(doc.get("about") or {}), dict(doc["design"])
                row.update(workload=about.get("workload"), platform=about.get("platform"),
                           units=sum(c["units"] for c in doc["chains"]), design=design,
                           captured_on={k: about[k] for k in ("core", "whatif_version") if k in about},
                           captured=datetime.fromtimestamp((entry / LIVE_MANIFEST).stat().st_mtime, timezone.utc)
                           .strftime("%Y-%m-%d %H:%M"), format=doc.get("whatif_live_points"),
                           stale=doc.get("state_code") != state_code())
            except FileNotFoundError:
                row["damaged"] = f"no {LIVE_MANIFEST}: not a live-point library"
            except (OSError, ValueError, UnicodeDecodeError, KeyError, TypeError, AttributeError) as exc:
                row["damaged"] = f"{type(exc).__name__}: {exc}"
            out.append(row)
        return out

    def verify(self, row: dict, advance: Callable[[int], None] | None = None) -> None:
        """Check the library ``row`` lists (:meth:`libraries`) record by record as a replay would
        (:meth:`LivePoints.verify`; ``advance(n)``: n more bytes checked): ``row["verified"]`` is then True, or
        ``row["damaged"]`` says what is wrong."""
        try:
            LivePoints.load(self.path / row["name"]).verify(advance)
            row["verified"] = True
        except DamagedLibrary as exc:
            row["damaged"] = exc.what
        except ValueError as exc:
            row["damaged"] = str(exc)

    def remove(self, names: list[str]) -> list[dict]:
        """Remove the libraries ``names`` (as :meth:`libraries` lists them) and return their rows.  Every name is
        checked before any is removed: one the store does not hold, or a directory whatif did not write as a
        library (a name not of its form, or holding a file other than a library's), raises
        :class:`ScenarioError` and nothing is removed.  A library is renamed out of the store first, then deleted
        (a kill in between leaves a staging directory that :meth:`prune` removes)."""
        listed = {r["name"]: r for r in self.libraries()}
        names = list(dict.fromkeys(names))
        for name in names:
            if name not in listed:
                raise ScenarioError(f"{self.label} {self.path}: holds no library {name!r} (`whatif live-points "
                                    f"{self.path}` lists them); nothing removed")
            foreign = sorted(f.name for f in (self.path / name).iterdir() if not _LIBRARY_FILE.fullmatch(f.name))
            if not _LIBRARY_NAME.fullmatch(name) or foreign or not (self.path / name / LIVE_MANIFEST).is_file():
                raise ScenarioError(f"{self.label} {self.path / name}: not a live-point library whatif wrote"
                                    f"{f' (it holds {foreign[0]!r})' if foreign else ''}; nothing removed")
        for name in names:
            doomed = self.path / _staging_name(name, "stage")
            os.rename(self.path / name, doomed)
            shutil.rmtree(doomed)
        return [listed[name] for name in names]

    def unfinished(self) -> list[dict]:
        """Captures staged in the store and not kept, by library name: their bytes, and whether the capture still
        runs.  A killed capture's directory stays until :meth:`prune`, or the next capture of its library, removes
        it; the store's marker must be there (:meth:`libraries`)."""
        self._check_store()
        return [{"library": name, "bytes": _bytes_under(entry), "running": running}
                for name, entry, running in staged_entries(self.path)]

    def _check_store(self) -> None:
        if not (self.path / MARKER).is_file():
            raise ScenarioError(f"{self.label} {self.path}: holds no live-point store (no {MARKER})")

    def prune(self) -> list[dict]:
        """Remove the staging directories of captures that no longer run; returns them (:meth:`unfinished`)."""
        dead = [row for row in self.unfinished() if not row["running"]]
        for row in dead:
            clean_leftovers(self.path / row["library"])
        return dead


def _bytes_under(path: Path) -> int:
    """Bytes of the file ``path``, or of the files under the directory ``path``."""
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.is_dir() else path.stat().st_size


_LIBRARY_NAME = re.compile(r"[A-Za-z0-9_.+-]+-[0-9a-f]{24}")
_LIBRARY_FILE = re.compile(re.escape(LIVE_MANIFEST) + r"|chain\d+\.[a-z_]+\.npy")
