"""cdc_merge's Python: landing (CDC files -> raw table), formats (the CDC JSON dialects),
capture (database change logs -> CDC files), scheduler (cdc-run) and demo (make demo)."""
