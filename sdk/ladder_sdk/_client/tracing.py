"""W3C trace context for outgoing requests, when OpenTelemetry is installed (it is optional).

With a span active, `trace_headers()` gives its `traceparent` (and `tracestate`), so the server's
spans join the caller's trace; without OpenTelemetry, or without a span, it gives nothing.
"""

from __future__ import annotations

try:
    from opentelemetry import propagate
except ImportError:  # pragma: no cover - exercised only where opentelemetry is absent
    propagate = None  # type: ignore[assignment]


def trace_headers() -> dict[str, str]:
    """Headers that carry the current trace context; empty when there is none to carry."""
    carrier: dict[str, str] = {}
    if propagate is not None:
        propagate.inject(carrier)
    return carrier
