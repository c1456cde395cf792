"""OpenTelemetry for every Ladder process: ``setup`` builds one process's tracer and meter,
``exporters`` reads the ``OTEL_*`` variables, ``histograms`` keeps latency histograms off the SDK,
``metrics`` makes instruments from tables of metrics, ``prometheus`` renders the text exposition
and ``span_queue`` bounds what waits for export.
"""
