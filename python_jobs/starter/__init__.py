"""cdc-init: a new dbt project with cdc_merge as a package (init.py; the files it writes: templates/)."""
