"""Capture commands that read a real database's change log and write Debezium-compatible JSON files."""
