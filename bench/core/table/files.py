"""Footers of table files: codecs, row groups, logical bytes, field ids.  Parquet above all; an ORC or Avro data
file (a table written with write.format.default orc/avro) gets its format, codec and stripes or blocks, no logical
size beyond its bytes on disk."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pyarrow.parquet as pq

from bench.core.catalog.s3 import filesystem
from bench.core.records.verification import FileFacts
from bench.core.uri import local_path


def open_uri(uri: str):
    """(pyarrow FileSystem, path) for a table file URI (file:, plain path or s3://)."""
    return filesystem(uri if "://" in uri else "file://" + local_path(uri))


def _other_facts(f, uri: str, size: int, magic: bytes) -> FileFacts | None:
    """An ORC or Avro file's facts (None: not one of them)."""
    if magic[:3] == b"ORC":
        import pyarrow.orc as orc

        o = orc.ORCFile(f)
        return FileFacts(path=uri, size=size, format="orc", codecs=[str(o.compression).lower()],
                         row_groups=o.nstripes, uncompressed_bytes=o.content_length, field_ids=True)
    if magic[:4] == b"Obj\x01":
        import io

        from pyiceberg.avro.file import AvroFile
        from pyiceberg.typedef import Record

        f.seek(0)
        data = f.read()

        class _Bytes:  # the InputFile AvroFile reads its header from
            def open(self, seekable: bool = True) -> io.BytesIO:
                return io.BytesIO(data)

        with AvroFile[Record](_Bytes()) as af:  # type: ignore[arg-type]
            codec = af.header.meta.get("avro.codec", "null")
        return FileFacts(path=uri, size=size, format="avro", codecs=[str(codec)],
                         row_groups=0, uncompressed_bytes=size, field_ids=True)
    return None


def footer_facts(uri: str, size: int = 0) -> FileFacts:
    fs, path = open_uri(uri)
    with fs.open_input_file(path) as f:
        other = _other_facts(f, uri, size, f.read(4))
        if other is not None:
            return other
        f.seek(0)
        md = pq.ParquetFile(f).metadata
    codecs: set[str] = set()
    uncompressed = 0
    for i in range(md.num_row_groups):
        rg = md.row_group(i)
        uncompressed += rg.total_byte_size
        for c in range(rg.num_columns):
            codecs.add(str(rg.column(c).compression).lower())
    # every top-level column carries a field id (pyarrow exposes it as PARQUET:field_id metadata)
    field_ids = all(bool(f.metadata) and b"PARQUET:field_id" in f.metadata
                    for f in md.schema.to_arrow_schema())
    return FileFacts(path=uri, size=size, codecs=sorted(codecs), row_groups=md.num_row_groups,
                     uncompressed_bytes=uncompressed, field_ids=field_ids)


def footers(files: list[tuple[str, int]], threads: int = 8) -> list[FileFacts]:
    """Footer facts of (uri, size) pairs, read in parallel, in input order."""
    if not files:
        return []
    with ThreadPoolExecutor(threads) as ex:
        return list(ex.map(lambda f: footer_facts(f[0], f[1]), files))
