"""The pin on a live source table: one snapshot and what it references, not the whole table.

A source table may be someone's live table: others keep committing to it while the harness works on its clone.
The pin is the snapshot cloned (and the snapshots its carried branches and tags point to): the metadata file it
was read from, their manifest lists and manifests, their live data and delete files.  `pin_source` records each
of those files' size and a sampled content hash (`sample_hash`: the first and last 64 KiB, the whole file when it
is smaller, with the size), so the cost follows the pinned snapshot, never the table's history: only the pinned
snapshots' manifest lists and manifests are opened.

After every engine run `observe` loads the source afresh and tells apart:
- others' commits (snapshots that were not in the source's metadata when it was pinned, or its refs moved): facts
  recorded beside the result, never a failure;
- a commit by the harness (a new snapshot whose manifest list lies under the clone's location, where every file
  the harness and its engines write lands): a failure;
- a pinned file changed (size or sampled content) or the pinned metadata file rewritten: a failure, named;
- pinned files gone (the owner's maintenance: expire_snapshots, remove_orphan_files): the runs from then on cannot
  be verified; what went and when is said.  The metadata file pinned from going (the owner's metadata clean-up,
  `write.metadata.delete-after-commit.enabled`) is only a fact: the clone has a metadata file of its own.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pyiceberg.table import Table

from bench.core.catalog.s3 import filesystem
from bench.core.records.scenario import OtherCommit, RefPin
from bench.core.table.entries import manifest_live_entries
from bench.core.uri import local_path

SAMPLE_BYTES = 64 * 1024  # hashed at each end of a file (the whole file when it is at most twice this)
MISSING = -1


def _fs(uri: str) -> tuple[Any, str]:
    return filesystem(uri if "://" in uri else "file://" + local_path(uri))


def sample_hash(uri: str) -> tuple[int, str]:
    """(size, sha256 of the size, the first and the last SAMPLE_BYTES) of a file; (MISSING, "") when it is gone.
    A cheap content check: a rewrite in place changes the size or, almost always, its head or tail (a Parquet
    file's footer and magic, a manifest's Avro header)."""
    import pyarrow.fs as pafs

    fs, path = _fs(uri)
    info = fs.get_file_info(path)
    if info.type != pafs.FileType.File:
        return MISSING, ""
    size = int(info.size or 0)
    h = hashlib.sha256(str(size).encode())
    try:
        with fs.open_input_file(path) as f:
            if size <= 2 * SAMPLE_BYTES:
                h.update(f.read())
            else:
                h.update(f.read_at(SAMPLE_BYTES, 0))
                h.update(f.read_at(SAMPLE_BYTES, size - SAMPLE_BYTES))
    except FileNotFoundError:
        return MISSING, ""
    return size, h.hexdigest()[:24]


class SourceFingerprint(BaseModel):
    """The pin: what must not change while the harness works on the clone, and what the source was then."""

    model_config = ConfigDict(extra="forbid")

    snapshot_id: int | None = None  # the pinned snapshot (None: an empty table)
    metadata_location: str = ""  # the metadata file the pin was read from: it must stay as it is
    current_snapshot_id: int | None = None  # the source's current snapshot when pinned (others may move it)
    snapshot_ids: list[int] = Field(default_factory=list)  # every snapshot the source listed when pinned
    refs: list[RefPin] = Field(default_factory=list)  # its branches and tags (main included) when pinned
    carried: list[str] = Field(default_factory=list)  # the refs the clone carries besides main
    files: dict[str, int] = Field(default_factory=dict)  # every pinned file -> size (MISSING: gone)
    samples: dict[str, str] = Field(default_factory=dict)  # ... -> sampled content hash
    taken_unix: float = 0.0
    seconds: float = 0.0  # how long taking it took
    digest: str = ""  # over the pinned files' sizes and samples

    def pinned_ids(self) -> set[int]:
        """The pinned snapshot and the snapshots of the carried refs."""
        ids = {r.snapshot_id for r in self.refs if r.name in self.carried}
        return ids | ({self.snapshot_id} if self.snapshot_id is not None else set())


def carried_refs(tbl: Table, pinned: int | None) -> dict[str, Any]:
    """The source's refs the clone carries besides main: every branch and tag other than main whose snapshot the
    source's metadata still holds (a ref whose snapshot expired has nothing to carry)."""
    if pinned is None:
        return {}
    return {name: ref for name, ref in tbl.metadata.refs.items()
            if name != "main" and tbl.metadata.snapshot_by_id(ref.snapshot_id) is not None}


def pinned_files(tbl: Table, snapshot_ids: set[int]) -> list[str]:
    """The metadata file, and of each of `snapshot_ids` its manifest list, manifests and live data and delete
    files: each manifest opened once, however many of the snapshots share it; nothing of other snapshots."""
    paths = {tbl.metadata_location}
    seen: set[str] = set()
    for sid in sorted(snapshot_ids):
        snap = tbl.metadata.snapshot_by_id(sid)
        if snap is None:
            continue
        paths.add(snap.manifest_list)
        for m in snap.manifests(tbl.io):
            paths.add(m.manifest_path)
            if m.manifest_path in seen:
                continue
            seen.add(m.manifest_path)
            paths.update(e.data_file.file_path for e in manifest_live_entries(tbl, m))
    return sorted(paths)


def pin_source(tbl: Table, snapshot_id: int | None) -> SourceFingerprint:
    """The pin of `tbl` at `snapshot_id` (None: its current snapshot, or none for an empty table)."""
    t0 = time.perf_counter()
    current = tbl.current_snapshot()
    sid = snapshot_id if snapshot_id is not None else (current.snapshot_id if current else None)
    carried = carried_refs(tbl, sid)
    fp = SourceFingerprint(
        snapshot_id=sid, metadata_location=tbl.metadata_location,
        current_snapshot_id=current.snapshot_id if current else None,
        snapshot_ids=[s.snapshot_id for s in tbl.metadata.snapshots],
        refs=[RefPin(name=n, type=r.snapshot_ref_type.value, snapshot_id=r.snapshot_id)
              for n, r in sorted(tbl.metadata.refs.items())],
        carried=sorted(carried), taken_unix=time.time())
    ids = fp.pinned_ids()
    for p in pinned_files(tbl, ids):
        fp.files[p], fp.samples[p] = sample_hash(p)
    fp.digest = hashlib.sha256(repr(sorted(fp.samples.items())).encode()).hexdigest()[:16]
    fp.seconds = time.perf_counter() - t0
    return fp


@dataclass
class Observation:
    """The source after an engine run, against its pin."""

    changed: list[str] = field(default_factory=list)  # pinned files changed in place: the harness's failure
    gone: list[str] = field(default_factory=list)  # pinned files no longer there: the owner's maintenance
    harness_commits: list[str] = field(default_factory=list)  # snapshots committed from the harness's warehouse
    others: list[OtherCommit] = field(default_factory=list)  # snapshots others committed since the pin
    refs_moved: list[str] = field(default_factory=list)  # the source's own refs others moved (facts)
    pinned_expired: bool = False  # the pinned snapshot no longer in the source's metadata
    metadata_gone: bool = False  # the metadata file pinned from was removed (write.metadata.delete-after-commit)
    seconds: float = 0.0

    @property
    def failures(self) -> list[str]:
        return self.changed + self.harness_commits


def under(path: str, root: str) -> bool:
    """`path` is `root` or lies below it."""
    p, r = local_path(path).rstrip("/"), local_path(root).rstrip("/")
    return bool(r) and (p == r or p.startswith(r + "/"))


def observe(pin: SourceFingerprint, tbl: Table, harness_root: str) -> Observation:
    """`tbl` (the source loaded afresh) against `pin`: its pinned files re-sampled by path (their number, not the
    history's length), the snapshots added since, who made them."""
    t0 = time.perf_counter()
    ob = Observation()
    for path, size in pin.files.items():
        now_size, now = sample_hash(path)
        if now_size == MISSING and size != MISSING and path == pin.metadata_location:
            ob.metadata_gone = True  # the owner's metadata clean-up: the clone has its own metadata file
        elif now_size == MISSING and size != MISSING:
            ob.gone.append(path)
        elif now != pin.samples.get(path):
            ob.changed.append(f"{path}: size {size} -> {now_size}" + (", content changed" if now_size == size else ""))
    known = set(pin.snapshot_ids)
    for s in tbl.metadata.snapshots:
        if s.snapshot_id in known:
            continue
        if under(s.manifest_list, harness_root):
            ob.harness_commits.append(f"snapshot {s.snapshot_id} committed to the source from the harness's "
                                      f"clone location ({s.manifest_list})")
        else:
            ob.others.append(OtherCommit(snapshot_id=s.snapshot_id, timestamp_ms=s.timestamp_ms,
                                         parent_id=s.parent_snapshot_id,
                                         operation=str(s.summary.operation.value) if s.summary else ""))
    now_refs = {n: r.snapshot_id for n, r in tbl.metadata.refs.items()}
    for r in pin.refs:
        if now_refs.get(r.name) != r.snapshot_id:
            ob.refs_moved.append(f"{r.type} {r.name}: {r.snapshot_id} -> {now_refs.get(r.name, 'gone')}")
    ob.pinned_expired = pin.snapshot_id is not None and tbl.metadata.snapshot_by_id(pin.snapshot_id) is None
    ob.seconds = time.perf_counter() - t0
    return ob


@dataclass
class SourceWatch:
    """A run's watch over its source: when every pinned file was last seen, what went (and when), what failed."""

    seen_unix: float  # the last time every pinned file was there
    gone: str = ""  # why the engine runs from now on cannot be verified ("": nothing went)
    gone_between: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # the harness's: pinned files changed, its commits
    last: Observation | None = None

    def saw(self, ob: Observation, pin: SourceFingerprint, table: str) -> None:
        """Observation `ob` of `table` against its pin `pin`: when files went (said the first time only), the
        harness's failures."""
        now = time.time()
        self.last = ob
        if ob.gone and not self.gone:
            self.gone_between = [_iso(self.seen_unix), _iso(now)]
            self.gone = (f"{len(ob.gone)} of the {len(pin.files)} files of the pinned snapshot {pin.snapshot_id} of "
                         f"{table} disappeared from the source between {self.gone_between[0]} and "
                         f"{self.gone_between[1]} (the table owner's maintenance, e.g. expire_snapshots or "
                         f"remove_orphan_files: the harness never writes to the source), e.g. {ob.gone[0]}")
        elif not ob.gone:
            self.seen_unix = now
        self.failures += [f for f in ob.failures if f not in self.failures]


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
