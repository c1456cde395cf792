"""What every Ladder process stands on: telemetry and Prometheus setup, the metrics server, heap
tuning, the embedded Valkey, the root error and the clock.
"""
