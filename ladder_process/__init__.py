"""What every Ladder process stands on: telemetry and Prometheus setup, the metrics and health-probe
server, heap tuning, the embedded Valkey, the root error and the clock.
"""
