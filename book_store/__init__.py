"""The contract between ingest nodes (writers) and read functions (readers)."""
