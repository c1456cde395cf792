"""The way finished spans leave a process: a bounded queue that drops, and counts, rather than waits.

A collector that is down or slow must cost the read and ingest paths nothing. The SDK's
:class:`BatchSpanProcessor` already exports from its own thread, out of a queue of at most
``OTEL_BSP_MAX_QUEUE_SIZE`` spans (2048 by default); when that queue is full it silently pushes the
oldest span out and logs a warning for each one. :class:`BoundedSpanProcessor` keeps the SDK's
queue and export thread but decides first: a span that finds the queue full is dropped on the spot
(one integer added, no log record per span) and counted in ``dropped``, which the process exposes
as ``ladder_telemetry_spans_dropped_total``. One warning per outage says that spans are being lost.

While exports fail, batches are not even encoded for a while (:class:`CountingSpanExporter`):
those spans count as dropped too. The OTLP exporter logs every failed export, which against a dead
collector is a line per batch; :func:`quiet_exporter_logs` lets one record a minute through per
exporter logger and level.

The queue's length is known without reading the SDK's internals: every span handed to the SDK is
counted in, and :class:`CountingSpanExporter`, the exporter the SDK's thread calls, counts each
batch out before it sends it. The SDK takes a batch off its queue just before that call, so the
count can only read high, never low: the SDK's own queue never overflows.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

log = logging.getLogger(__name__)

DEFAULT_MAX_QUEUE_SIZE = 2048
"""The specification's default for ``OTEL_BSP_MAX_QUEUE_SIZE``."""
DEFAULT_MAX_EXPORT_BATCH_SIZE = 512
"""... and for ``OTEL_BSP_MAX_EXPORT_BATCH_SIZE``."""
DROP_WARNING_INTERVAL_S = 60.0
FIRST_EXPORT_PAUSE_S = 1.0
MAX_EXPORT_PAUSE_S = 30.0
EXPORTER_LOGGERS = (
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "opentelemetry.exporter.otlp.proto.http.metric_exporter",
    "opentelemetry.exporter.otlp.proto.http._common",
)


class OncePerInterval(logging.Filter):
    """Lets one record per level through every ``interval_s``; the rest of a burst is dropped."""

    def __init__(self, interval_s: float = DROP_WARNING_INTERVAL_S) -> None:
        super().__init__()
        self.interval_s = interval_s
        self._last: dict[int, float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        now = time.monotonic()
        if now - self._last.get(record.levelno, -self.interval_s) < self.interval_s:
            return False
        self._last[record.levelno] = now
        return True


def quiet_exporter_logs() -> None:
    """At most one export failure a minute per exporter logger and level (idempotent)."""
    for name in EXPORTER_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, OncePerInterval) for f in logger.filters):
            logger.addFilter(OncePerInterval())


class CountingSpanExporter(SpanExporter):
    """An exporter that counts the spans it is handed and how each export ended, and pauses after
    a failure.

    Encoding a batch costs the process about as much CPU as making its spans did; against a
    collector that refuses every batch that is pure waste, taken from the hot path's core. So after
    a failed export the batches of the next ``pause`` seconds are discarded unencoded (outcome
    ``skipped``), the pause doubling up to :data:`MAX_EXPORT_PAUSE_S` while failures go on, and
    ending at the first success.
    """

    def __init__(self, exporter: SpanExporter) -> None:
        self.exporter = exporter
        self.handed = 0
        self.outcomes: dict[str, int] = {}
        self._pause_s = 0.0
        self._resume_at = 0.0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.handed += len(spans)
        if time.monotonic() < self._resume_at:
            self.outcomes["skipped"] = self.outcomes.get("skipped", 0) + len(spans)
            return SpanExportResult.FAILURE
        result = SpanExportResult.FAILURE
        try:
            result = self.exporter.export(spans)
        finally:
            if result is SpanExportResult.SUCCESS:
                outcome, self._pause_s = "exported", 0.0
            else:
                outcome = "failed"
                self._pause_s = min(max(2 * self._pause_s, FIRST_EXPORT_PAUSE_S), MAX_EXPORT_PAUSE_S)
                self._resume_at = time.monotonic() + self._pause_s
            self.outcomes[outcome] = self.outcomes.get(outcome, 0) + len(spans)
        return result

    def shutdown(self) -> None:
        self.exporter.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.exporter.force_flush(timeout_millis)


class BoundedSpanProcessor(BatchSpanProcessor):
    """The SDK's batch processor, with a queue bound that drops new spans and counts them."""

    def __init__(
        self,
        exporter: SpanExporter,
        max_queue_size: int = DEFAULT_MAX_QUEUE_SIZE,
        max_export_batch_size: int = DEFAULT_MAX_EXPORT_BATCH_SIZE,
    ) -> None:
        self.counting = CountingSpanExporter(exporter)
        # A batch larger than the queue is refused by the SDK; a small queue takes smaller batches.
        batch = min(max_export_batch_size, max_queue_size)
        super().__init__(self.counting, max_queue_size=max_queue_size, max_export_batch_size=batch)
        self.max_queue_size = max_queue_size
        self.accepted = 0
        self.dropped = 0
        self._warned_at = -DROP_WARNING_INTERVAL_S

    @classmethod
    def from_env(cls, exporter: SpanExporter, environ: Mapping[str, str]) -> BoundedSpanProcessor:
        """Sizes from ``OTEL_BSP_MAX_QUEUE_SIZE`` and ``OTEL_BSP_MAX_EXPORT_BATCH_SIZE`` (the SDK reads
        the delay and the timeout itself)."""
        return cls(
            exporter,
            _positive(environ, "OTEL_BSP_MAX_QUEUE_SIZE", DEFAULT_MAX_QUEUE_SIZE),
            _positive(environ, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", DEFAULT_MAX_EXPORT_BATCH_SIZE),
        )

    @property
    def queued(self) -> int:
        """Spans waiting for the export thread (may read high by the batch being taken off)."""
        return self.accepted - self.counting.handed

    def on_end(self, span: ReadableSpan) -> None:
        if not (span.context and span.context.trace_flags.sampled):
            return
        if self.accepted - self.counting.handed >= self.max_queue_size:
            self.dropped += 1
            now = time.monotonic()
            if now - self._warned_at >= DROP_WARNING_INTERVAL_S:
                self._warned_at = now
                log.warning(
                    "span queue full (%d spans): the collector is down or slow; dropping spans "
                    "(ladder_telemetry_spans_dropped_total counts them)",
                    self.max_queue_size,
                )
            return
        self.accepted += 1
        super().on_end(span)


def _positive(environ: Mapping[str, str], name: str, default: int) -> int:
    raw = environ.get(name, "").strip()
    if raw.isdigit() and int(raw) > 0:
        return int(raw)
    if raw:
        log.warning("%s=%r is not a positive integer; using %d", name, raw, default)
    return default
