"""Whether this process keeps each mirror's key index between runs (docs/apply_service.md, "Build
order", step 1; jvm/iceberg/cdc_merge/iceberg/KeyIndex.java).

An index pays for itself only in a process that applies batch after batch to the same mirrors:
building it reads every key of the mirror once, which one `dbt run` of one batch would not earn
back. So it is off unless $CDC_MERGE_KEY_INDEX_MAX_KEYS is set, and `cdc-run` sets it; the value
is the most keys the process keeps in all its indexes together (a table with more live rows is not
indexed; the least recently used index is dropped to make room), 0 turns the index off.
"""

from __future__ import annotations

import os
from typing import MutableMapping

KEY_INDEX_MAX_KEYS_ENV = "CDC_MERGE_KEY_INDEX_MAX_KEYS"

# About 50 bytes of JVM heap a key and a byte a character of key and seq (KeyRows.java): about 120 MB
# for this many keys of the benchmark's (benchmarks.apply.key_index).
SERVICE_MAX_KEYS = 1_000_000


def max_keys(environ: MutableMapping[str, str] = os.environ) -> int:
    """The most keys this process keeps in all its indexes together; 0 when it keeps no index."""
    value = environ.get(KEY_INDEX_MAX_KEYS_ENV, "").strip()
    if not value:
        return 0
    try:
        keys = int(value.replace("_", ""))
    except ValueError:
        keys = -1
    if keys < 0:
        raise ValueError(f"{KEY_INDEX_MAX_KEYS_ENV}={value!r}: set it to the most keys to keep in all "
                         f"mirrors' indexes together (a whole number, e.g. {SERVICE_MAX_KEYS}), or 0 to keep no index")
    return keys


def keep_in_service(environ: MutableMapping[str, str] = os.environ) -> int:
    """For a long-lived service (cdc-run): the index on, unless the environment says otherwise; the
    most keys it keeps. Raises ValueError, before any run, for a value that is not a number."""
    environ.setdefault(KEY_INDEX_MAX_KEYS_ENV, str(SERVICE_MAX_KEYS))
    return max_keys(environ)
