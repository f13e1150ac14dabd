"""Whether a micro-batch of the landing is parsed whole in the driver instead of by the JVM fast path.

The JVM fast path parses Debezium lines in a Spark job and appends them in a commit of their own,
then reads the files again for the lines it left (other formats, schema envelopes, tombstones,
bad lines) and appends those in a second commit. For a batch of a few files (a cycle of a
continuous pipeline) these fixed costs outweigh the parse: the driver reads the lines in one job
and parses them all with the Python parsers (the same functions as the UDF, which the JVM parser
matches line for line: tests/test_jvm_parser.py), appended in one commit (BENCHMARKS.md, "Levers
tried").

A retried batch keeps the way its first try took: the commits of one way are tagged differently
from the other's, and a switch would land its events twice.
"""

from __future__ import annotations

import os
from typing import Callable, Iterable, Optional
from urllib.parse import unquote, urlparse

# About 2,000 Debezium events: parsed in Python in about 0.05 s, less than a Spark job.
MAX_BATCH_BYTES_PARSED_IN_DRIVER = 1_000_000
# The tag suffix of the JVM fast path's commit of the events it parsed (land.py).
JVM_COMMIT_SUFFIX = "/jvm"


def local_bytes(files: Iterable[str]) -> Optional[int]:
    """The total size of files (paths or file: URIs) as they are now; None when there are none, or
    one is not on this machine's file system or is gone."""
    total = None
    for name in files:
        address = urlparse(name)
        if address.scheme not in ("", "file"):
            return None
        try:
            total = (total or 0) + os.stat(unquote(address.path)).st_size
        except OSError:
            return None
    return total


def parse_in_driver(batch_bytes: Optional[int], batch_tag: str, may_be_retry: bool,
                    committed: Callable[[str], bool]) -> bool:
    """batch_bytes: local_bytes of the batch's files; committed(tag): whether the raw table holds a
    commit with that tag (asked only of a batch an earlier run may have tried)."""
    if may_be_retry:
        if committed(batch_tag + JVM_COMMIT_SUFFIX):
            return False
        if committed(batch_tag):
            return True
    return batch_bytes is not None and batch_bytes <= MAX_BATCH_BYTES_PARSED_IN_DRIVER
