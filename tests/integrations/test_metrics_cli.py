"""`exec` counts its calls as OpenTelemetry metrics when the process has a global meter
provider (as under `opentelemetry-instrument`), and costs nothing when it has none."""

from __future__ import annotations

import subprocess
import sys

import orjson

SCRIPT = """
import orjson, sys
from opentelemetry import metrics
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

reader = InMemoryMetricReader()
metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
from refusals.cli import main
try:
    main(["exec", "-m", "mock:refusal", "--fallback-model", "mock:answer", "Say hi."])
except SystemExit as exit:
    code = exit.code
points = []
for resource in reader.get_metrics_data().resource_metrics:
    for scope in resource.scope_metrics:
        for metric in scope.metrics:
            for point in metric.data.data_points:
                points.append([metric.name, dict(point.attributes), point.value])
print("METRICS", orjson.dumps({"code": code, "points": points}).decode())
"""


def _run(script: str) -> dict[str, object]:
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    line = next(x for x in result.stdout.splitlines() if x.startswith("METRICS "))
    data: dict[str, object] = orjson.loads(line[len("METRICS ") :])
    return data


def test_exec_counts_responses_blocks_and_fallback_hops() -> None:
    data = _run(SCRIPT)
    assert data["code"] == 0  # the fallback answered
    points = data["points"]
    assert isinstance(points, list)

    def value(name: str, **attributes: str) -> int:
        return sum(
            int(v) for n, a, v in points if n == name and set(attributes.items()) <= set(a.items())
        )

    assert value("gen_ai.client.refusals.requests", **{"refusals.finish_reason": "refusal"}) == 1
    assert value("gen_ai.client.refusals.requests", **{"refusals.finish_reason": "stop"}) == 1
    assert value("gen_ai.client.refusals.blocked", **{"refusals.kind": "refusal"}) == 1
    assert value("gen_ai.client.refusals.fallbacks", **{"refusals.outcome": "answered"}) == 1


def test_without_a_meter_provider_exec_does_not_import_opentelemetry() -> None:
    script = (
        "import sys\nfrom refusals.cli import main\n"
        "try:\n    main(['exec', 'Say hi.'])\nexcept SystemExit:\n    pass\n"
        "print('METRICS', '{\"loaded\": %s}' % str('opentelemetry' in sys.modules).lower())\n"
    )
    assert _run(script) == {"loaded": False}
