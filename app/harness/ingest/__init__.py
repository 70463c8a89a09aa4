"""Trace ingest: observability exports in, normalised traces, trajectories and benchmarks out
(docs/ingest.md)."""
