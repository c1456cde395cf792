"""An OTLP/HTTP receiver on loopback: what a collector sees of the spans and metrics a process exports.

It answers ``POST /v1/traces`` and ``POST /v1/metrics`` as the OTLP specification says (a
protobuf ``Export*ServiceRequest``, maybe gzip, answered with an empty ``Export*ServiceResponse``)
and decodes them with ``opentelemetry-proto``, the collector's own message definitions. It runs
in a thread, so a test can start processes against it and wait for what they send.
"""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue


@dataclass(frozen=True)
class ReceivedSpan:
    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    kind: int
    attributes: dict[str, Any]
    resource: dict[str, Any]


@dataclass
class Received:
    """Everything received so far (appended to by the server's threads)."""

    spans: list[ReceivedSpan] = field(default_factory=list)
    metric_resources: list[dict[str, Any]] = field(default_factory=list)
    metric_names: set[str] = field(default_factory=set)
    requests: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def named(self, name: str) -> list[ReceivedSpan]:
        with self.lock:
            return [span for span in self.spans if span.name == name]

    def wait_for(
        self, what: str, found: Callable[[Received], list[ReceivedSpan]], timeout_s: float = 20.0
    ) -> list[ReceivedSpan]:
        """Poll until ``found`` gives something, else fail saying what arrived."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            spans = found(self)
            if spans:
                return spans
            time.sleep(0.1)
        with self.lock:
            names = sorted({span.name for span in self.spans})
        raise AssertionError(f"no {what} within {timeout_s} s; span names received: {names}")


def value_of(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [value_of(v) for v in value.array_value.values]
    return None if kind is None else getattr(value, kind)


def attributes_of(pairs: Any) -> dict[str, Any]:
    return {pair.key: value_of(pair.value) for pair in pairs if isinstance(pair, KeyValue)}


def _handler(received: Received) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            if self.path == "/v1/traces":
                self._traces(body)
                answer = ExportTraceServiceResponse().SerializeToString()
            elif self.path == "/v1/metrics":
                self._metrics(body)
                answer = ExportMetricsServiceResponse().SerializeToString()
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def _traces(self, body: bytes) -> None:
            request = ExportTraceServiceRequest.FromString(body)
            spans = [
                ReceivedSpan(
                    name=span.name,
                    trace_id=span.trace_id.hex(),
                    span_id=span.span_id.hex(),
                    parent_span_id=span.parent_span_id.hex(),
                    kind=span.kind,
                    attributes=attributes_of(span.attributes),
                    resource=attributes_of(resource_spans.resource.attributes),
                )
                for resource_spans in request.resource_spans
                for scope_spans in resource_spans.scope_spans
                for span in scope_spans.spans
            ]
            with received.lock:
                received.requests += 1
                received.spans.extend(spans)

        def _metrics(self, body: bytes) -> None:
            request = ExportMetricsServiceRequest.FromString(body)
            with received.lock:
                received.requests += 1
                for resource_metrics in request.resource_metrics:
                    received.metric_resources.append(attributes_of(resource_metrics.resource.attributes))
                    for scope_metrics in resource_metrics.scope_metrics:
                        received.metric_names.update(m.name for m in scope_metrics.metrics)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


class OtlpReceiver:
    """A receiver on a free loopback port; ``url`` is what ``OTEL_EXPORTER_OTLP_ENDPOINT`` names.

    :meth:`close` stops it and frees the port, so the processes exporting to it find a dead
    collector from then on.
    """

    def __init__(self) -> None:
        self.received = Received()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self.received))
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="otlp-receiver", daemon=True)
        self._thread.start()
        self._closed = False

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._server.shutdown()
            self._server.server_close()


@contextmanager
def otlp_receiver() -> Iterator[OtlpReceiver]:
    receiver = OtlpReceiver()
    try:
        yield receiver
    finally:
        receiver.close()
