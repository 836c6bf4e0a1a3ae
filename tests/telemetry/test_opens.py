"""The delete files' opens (bench.telemetry.opens): real opens of real files, counted by the kernel's inotify,
sorted into position deletes, equality deletes and data files; a file never opened counts 0; what is opened
after the watch stopped does not count."""

import threading
from pathlib import Path

from bench.telemetry.opens import OpenWatch


def test_opens_from_two_threads_at_once_are_all_counted_per_file(tmp_path: Path):
    part = tmp_path / "data" / "p=1"  # a partition's directory: watched too
    part.mkdir(parents=True)
    pos, eq1, eq2, data = (str(part / f"{n}.parquet") for n in ("pos", "eq1", "eq2", "data"))
    unopened = str(tmp_path / "data" / "eq3.parquet")
    for f in (pos, eq1, eq2, data, unopened):
        Path(f).write_bytes(b"x")
    watch = OpenWatch(root=tmp_path, position={pos}, equality={eq1, eq2, unopened}, data={data})
    watch.start()

    # each thread its own file, so that every open is counted: the kernel merges an event into the last one still
    # unread only when it is the same (two readers opening one file at the same instant, which opens.py says)
    def reader(f: str, n: int) -> None:
        for _ in range(n):
            with open(f, "rb") as fh:
                fh.read()
    threads = [threading.Thread(target=reader, args=a) for a in ((eq1, 1000), (eq2, 600))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    Path(pos).read_bytes()
    Path(data).read_bytes()
    Path(data).read_bytes()
    watch.stop()
    Path(eq1).read_bytes()  # after the watch: not counted
    rec = watch.record(tasks=4)
    assert (rec.position_opens, rec.data_opens, rec.equality_opens) == (1, 2, 1600)
    assert rec.opens == 1601 and not rec.lower_bound and rec.opens_per_task == 400.25
    assert (rec.delete_files, rec.opened, rec.per_file_min, rec.per_file_max) == (4, 3, 0, 1000)
    assert rec.per_file_median == 300.5  # of 0, 1, 600 and 1,000
    assert "1,601 opens of 3 of 4 delete files" in rec.describe() and "(4 tasks)" in rec.describe()
    watch.stop()  # twice: harmless


def test_a_flood_of_opens_is_counted_up_to_the_cap_and_said_to_be_a_lower_bound(tmp_path: Path):
    f = tmp_path / "eq.parquet"
    f.write_bytes(b"x")
    watch = OpenWatch(root=tmp_path, position=set(), equality={str(f)}, data=set(), max_events=100)
    watch.start()
    for _ in range(300):  # 600 events (open + close): more than the cap
        f.read_bytes()
    watch.stop()
    rec = watch.record()
    assert rec.lower_bound and watch.capped_after_s is not None and watch.events >= 100 and 50 <= rec.opens <= 300
    assert "counting ended after" in rec.note and "(at least)" in rec.describe()


def test_a_large_input_is_sampled_file_by_file_and_scaled(tmp_path: Path, monkeypatch):
    """Above SAMPLE_ABOVE delete files only an even sample of each kind is watched (one watch per file); the totals
    are the sample's counts scaled to every file, and the record says so."""
    from bench.telemetry import opens

    monkeypatch.setattr(opens, "SAMPLE_ABOVE", 10)
    monkeypatch.setattr(opens, "SAMPLE_FILES", 4)
    d = tmp_path / "data"
    d.mkdir()
    eq = [str(d / f"eq{i:02}.parquet") for i in range(20)]
    data = [str(d / f"d{i:02}.parquet") for i in range(8)]
    for f in eq + data:
        Path(f).write_bytes(b"x")
    watch = OpenWatch(root=tmp_path, position=set(), equality=set(eq), data=set(data))
    watch.sample = set().union(opens.even_sample(set(eq), 4), opens.even_sample(set(data), 4))
    assert len(watch.sample) == 8
    watch.start()
    for f in eq:  # every equality delete opened 3 times, every data file once
        for _ in range(3):
            Path(f).read_bytes()
    for f in data:
        Path(f).read_bytes()
    watch.stop()
    rec = watch.record()
    assert (rec.equality_opens, rec.opens, rec.data_opens, rec.opened) == (60, 60, 8, 20)
    assert (rec.per_file_min, rec.per_file_max, rec.watched_files) == (3, 3, 8)
    assert "sampled: 4 of 20 delete files and 4 of 8 data files watched" in rec.note
    assert rec.describe().startswith("about 60 opens of about 20 of 20 delete files")
