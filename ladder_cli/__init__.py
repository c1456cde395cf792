"""The ``ladder`` command: one entry point for every process, the ``ladder up`` supervisor, benches and
build tooling.
"""
