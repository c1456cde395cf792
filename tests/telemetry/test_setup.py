"""``Telemetry.from_env``: which exporters and sampler the standard OTEL_* variables select."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
from opentelemetry.trace import (
    NonRecordingSpan,
    SpanContext,
    TraceFlags,
    get_current_span,
    set_span_in_context,
)

from ladder_process.telemetry.exporters import sampler_from_env
from ladder_process.telemetry.setup import Telemetry, caller_context


def test_no_exporter_configured_means_no_tracer_but_metrics() -> None:
    telemetry = Telemetry.from_env("ladder-test", {})
    assert telemetry.tracer is None
    assert telemetry.enabled
    telemetry.meter.create_counter("ladder_test_things").add(2)
    assert b"ladder_test_things_total 2" in telemetry.render_prometheus()
    telemetry.shutdown()


def test_sdk_disabled_turns_everything_off() -> None:
    telemetry = Telemetry.from_env(
        "ladder-test", {"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "console"}
    )
    assert telemetry.tracer is None and not telemetry.enabled
    telemetry.meter.create_counter("ladder_test_things").add(1)
    assert telemetry.render_prometheus() == b""


def test_console_exporter_gives_a_tracer_and_the_service_name() -> None:
    telemetry = Telemetry.from_env(
        "ladder-test", {"OTEL_TRACES_EXPORTER": "console", "OTEL_SERVICE_NAME": "edge"}
    )
    assert telemetry.tracer is not None
    assert telemetry.service_name == "edge"
    telemetry.shutdown()


def test_an_otlp_endpoint_gives_the_http_exporter_by_default() -> None:
    telemetry = Telemetry.from_env("ladder-test", {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"})
    assert telemetry.tracer is not None
    telemetry.shutdown()


def test_grpc_without_its_package_warns_and_exports_over_http(caplog: pytest.LogCaptureFixture) -> None:
    try:
        import opentelemetry.exporter.otlp.proto.grpc  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("opentelemetry-exporter-otlp-proto-grpc is installed here")
    with caplog.at_level(logging.WARNING):
        telemetry = Telemetry.from_env(
            "ladder-test",
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
        )
    assert telemetry.tracer is not None, "spans still leave, over HTTP"
    assert "opentelemetry-exporter-otlp-proto-grpc" in caplog.text
    telemetry.shutdown()


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (
            {},
            "ParentBased{root:LadderSampler{errors, ladder.replica_move, ladder.resync, "
            "ladder.snapshot_fetch, publishes >= 25.0 ms, rest 0.01}",
        ),
        ({"OTEL_TRACES_SAMPLER": "parentbased_always_on"}, "ParentBased{root:AlwaysOnSampler"),
        ({"OTEL_TRACES_SAMPLER": "ladder", "OTEL_TRACES_SAMPLER_ARG": "0.2"}, "LadderSampler{"),
        ({"OTEL_TRACES_SAMPLER": "always_off"}, "AlwaysOffSampler"),
        (
            {"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.25"},
            "TraceIdRatioBased{0.25}",
        ),
        (
            {"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.1"},
            "ParentBased{root:TraceIdRatioBased{0.1}",
        ),
        ({"OTEL_TRACES_SAMPLER": "nonsense"}, "ParentBased{root:LadderSampler"),
    ],
)
def test_sampler_follows_the_standard_variables(env: dict[str, str], expected: str) -> None:
    assert sampler_from_env(env).get_description().startswith(expected)


def test_a_bad_ratio_falls_back_to_one() -> None:
    sampler = sampler_from_env(
        {"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "x"}
    )
    description = sampler.get_description()  # through Sampler's annotated method, before the narrowing
    assert isinstance(sampler, ParentBased)
    assert "TraceIdRatioBased{1.0}" in description
    assert isinstance(sampler_from_env({"OTEL_TRACES_SAMPLER": "traceidratio"}), TraceIdRatioBased)


def test_caller_context_reads_w3c_traceparent() -> None:
    assert caller_context({}) is None
    context = caller_context({"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"})
    assert context is not None
    parent = get_current_span(context).get_span_context()
    assert parent.trace_id == 0x4BF92F3577B34DA6A3CE929D0E0E4736
    assert parent.span_id == 0x00F067AA0BA902B7 and parent.is_remote


def test_the_default_sampler_keeps_what_matters_and_a_share_of_the_rest() -> None:
    tracer_of = TracerProvider(sampler=sampler_from_env({})).get_tracer("test")

    def kept(name: str, attributes: dict[str, str | int | float] | None = None, **kwargs: Any) -> bool:
        span = tracer_of.start_span(name, attributes=attributes, **kwargs)
        span.end()
        return bool(span.get_span_context().trace_flags.sampled)

    for _ in range(50):
        assert kept("GET /v1/books/{exchange}/{market}", {"http.response.status_code": 503})
        assert kept("ladder.snapshot_fetch", {"error.type": "VenueRequestError"})
        assert kept("ladder.resync", {"ladder.reason": "gap"}) and kept("ladder.replica_move")
        assert kept("ladder.publish_batch", {"ladder.snapshots": 3, "ladder.duration_ms": 40.0})
    ordinary = sum(kept("ladder.publish_batch", {"ladder.duration_ms": 0.8}) for _ in range(3000))
    reads = sum(kept("GET /v1/tops", {"http.response.status_code": 200}) for _ in range(3000))
    assert 5 <= ordinary <= 90 and 5 <= reads <= 90  # about 1 % (30 of 3000)
    # a request follows its caller: in a sampled trace it is recorded, in an unsampled one not
    for flags, expected in ((TraceFlags.SAMPLED, True), (TraceFlags.DEFAULT, False)):
        caller = SpanContext(0x1234, 0x5678, is_remote=True, trace_flags=TraceFlags(flags))
        context = set_span_in_context(NonRecordingSpan(caller))
        assert kept("GET /v1/tops", {"http.response.status_code": 200}, context=context) is expected
