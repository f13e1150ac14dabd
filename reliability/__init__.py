"""Reliability checks of the project: generators of hostile input and the scripts that measure
what the landing and the capture programs do with it (RELIABILITY.md)."""
