"""Benchmarks, run by hand (``ladder bench NAME``), never by the test suite; see bench/README.md."""
