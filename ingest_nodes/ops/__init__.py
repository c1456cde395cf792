"""What an ingest node tells its operators: counters, reports in the store, replica cross-checks,
telemetry.
"""
