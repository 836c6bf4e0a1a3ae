"""Content hashes of a table's files (bench.core.table.hashes): a file changed in place, same size and mtime
set back, is caught by its content; an unchanged file is not read again (its ctime unchanged)."""

import os

from bench.core.table.hashes import content_hashes, differing


def test_a_file_changed_in_place_is_caught_and_an_unchanged_one_is_not_read(tmp_path):
    root = tmp_path / "t"
    (root / "data").mkdir(parents=True)
    for name in ("a", "b"):
        (root / "data" / f"{name}.parquet").write_bytes(name.encode() * 1000)
    files = {"data/a.parquet": 1000, "data/b.parquet": 1000}
    cache = tmp_path / "t.hashes.json"
    recorded, read = content_hashes(f"file://{root}", files, cache)
    assert read == 2 and len(set(recorded.values())) == 2
    again, read = content_hashes(f"file://{root}", files, cache)
    assert again == recorded and read == 0  # one stat per file, nothing read
    b = root / "data" / "b.parquet"
    st = b.stat()
    with open(b, "r+b") as fh:  # one byte changed in place: same size, mtime set back
        fh.write(b"X")
    os.utime(b, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert b.stat().st_size == st.st_size and b.stat().st_mtime_ns == st.st_mtime_ns
    now, read = content_hashes(f"file://{root}", files, cache)
    assert read == 1 and differing(recorded, now) == ["data/b.parquet"]
    assert content_hashes("s3://bucket/t", files) == ({}, 0)  # S3: not hashed (the check says so)
