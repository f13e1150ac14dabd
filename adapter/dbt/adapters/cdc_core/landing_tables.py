"""What a mirror model's config check needs from the landing config: its format and the tables
it captures (both adapters expose it to macros as adapter.cdc_landing_tables)."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

import yaml

# Every mirror of a run asks for the same file: parsed once per version of it (its path, size and
# modification time), not once per mirror (a landing config of 200 tables took 20 ms to parse).
_PARSED: Dict[str, Tuple[Tuple[int, int], Optional[Dict[str, Any]]]] = {}
_LOCK = threading.Lock()


def landing_tables(path: str) -> Optional[Dict[str, Any]]:
    """{'path', 'format', 'tables': [schema.table, lower case], 'keys': {schema.table: [key columns]}} of the landing config at path, or
    None when there is no readable one there (the landing job reports that itself)."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    version = (stat.st_size, stat.st_mtime_ns)
    with _LOCK:
        cached = _PARSED.get(path)
    if cached is not None and cached[0] == version:
        return _copy(cached[1])
    parsed = _parse(path)
    with _LOCK:
        _PARSED[path] = (version, parsed)
    return _copy(parsed)


def _parse(path: str) -> Optional[Dict[str, Any]]:
    try:
        document = yaml.safe_load(Path(path).read_text()) or {}
    except (OSError, yaml.YAMLError):
        return None
    if not isinstance(document, dict):
        return None
    tables = document.get("tables") if isinstance(document.get("tables"), dict) else {}
    return {
        "path": str(Path(path).resolve()),
        "format": str(document.get("format", "auto")),
        "tables": sorted(str(table).lower() for table in tables),
        "keys": {str(table).lower(): _key(spec) for table, spec in tables.items()},
    }


def _key(spec: Any) -> list:
    """A table's key columns as its entry names them ({key: [columns]} or {key: column}); [] when it names none."""
    key = spec.get("key") if isinstance(spec, dict) else None
    key = [key] if isinstance(key, str) else key
    return [str(column) for column in key] if isinstance(key, list) else []


def _copy(parsed: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """A caller's own copy: the macros may change what they are given."""
    if parsed is None:
        return None
    return {**parsed, "tables": list(parsed["tables"]), "keys": {table: list(key) for table, key in parsed["keys"].items()}}
