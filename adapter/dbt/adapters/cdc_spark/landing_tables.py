"""What a mirror model's config check needs from the landing config: its format and the tables
it captures (both adapters expose it to macros as adapter.cdc_landing_tables)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Optional

import yaml


def landing_tables(path: str) -> Optional[Dict[str, Any]]:
    """{'path', 'format', 'tables': [schema.table, lower case]} of the landing config at path, or
    None when there is no readable one there (the landing job reports that itself)."""
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
    }
