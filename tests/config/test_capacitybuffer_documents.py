"""CapacityBuffer and PodTemplate documents through `parse_yaml`, as `nodewright nodepool validate` reads them."""

from __future__ import annotations

import pytest

from nodewright.config.documents import CAPACITYBUFFER, PODTEMPLATE
from nodewright.config.stream import parse_yaml
from nodewright.model.capacitybuffer import CapacityBuffer, PodTemplate, ScalableRef
from nodewright.model.resources import Resources

TEMPLATE = """\
apiVersion: v1
kind: PodTemplate
metadata: {name: burst-chunk, namespace: web}
template:
  metadata: {labels: {app: checkout}}
  spec:
    containers:
      - name: app
        image: registry.k8s.io/pause:3.9
        resources: {requests: {cpu: "1", memory: 2Gi}}
"""
BUFFER = """\
apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata: {name: burst, namespace: web}
spec:
  podTemplateRef: {name: burst-chunk}
  replicas: 4
"""


def test_a_template_buffer_and_its_podtemplate_are_accepted_unchanged() -> None:
    loaded = parse_yaml(TEMPLATE + "---\n" + BUFFER, "buffer.yaml")
    assert loaded.ok, loaded.problems
    assert loaded.warnings == ()
    (template,) = (d.model for d in loaded.of_kind(PODTEMPLATE))
    (buffer,) = (d.model for d in loaded.of_kind(CAPACITYBUFFER))
    assert isinstance(template, PodTemplate)
    assert template.pod.requests["cpu"] == 1000
    assert template.pod.labels == {"app": "checkout"}
    assert buffer == CapacityBuffer("burst", "web", pod_template_ref="burst-chunk", replicas=4)


def test_a_workload_buffer_with_a_percentage_and_limits() -> None:
    text = """\
apiVersion: autoscaling.x-k8s.io/v1alpha1
kind: CapacityBuffer
metadata: {name: db}
spec:
  scalableRef: {apiGroup: apps, kind: StatefulSet, name: database}
  percentage: 20
  limits: {cpu: "8"}
"""
    (document,) = parse_yaml(text, "b.yaml").require()
    assert document.model == CapacityBuffer(
        "db",
        scalable_ref=ScalableRef("StatefulSet", "database", "apps"),
        percentage=20,
        limits=Resources.parse({"cpu": "8"}),
        api_version="autoscaling.x-k8s.io/v1alpha1",
    )


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(
            "{podTemplateRef: {name: a}, scalableRef: {kind: Deployment, name: b}, replicas: 1}",
            "CapacityBuffer/burst: spec: must set either podTemplateRef or scalableRef, not both",
            id="both-refs",
        ),
        pytest.param(
            "{replicas: 1}", "CapacityBuffer/burst: spec: must set one of podTemplateRef and scalableRef", id="no-ref"
        ),
        pytest.param(
            "{podTemplateRef: {name: a}}",
            "CapacityBuffer/burst: spec: a podTemplateRef buffer must also set replicas or limits",
            id="template-without-count",
        ),
        pytest.param(
            "{podTemplateRef: {name: a}, replicas: 1, percentage: 10}",
            "CapacityBuffer/burst: spec.percentage: applies only with scalableRef (a share of the workload's replicas)",
            id="percentage-without-workload",
        ),
        pytest.param(
            "{scalableRef: {kind: Deployment, name: b}, replicas: -1}",
            "CapacityBuffer/burst: spec.replicas: must be at least 0, got -1",
            id="negative-replicas",
        ),
        pytest.param(
            "{scalableRef: {name: b}, replicas: 1}",
            "CapacityBuffer/burst: spec.scalableRef.kind: is required",
            id="workload-without-kind",
        ),
        pytest.param(
            "{scalableRef: {kind: Deployment, name: b}, limits: {cpu: lots}}",
            "CapacityBuffer/burst: spec.limits.cpu:",
            id="bad-quantity",
        ),
    ],
)
def test_each_broken_rule_is_a_problem_naming_the_file_document_and_field(spec: str, expected: str) -> None:
    text = f"apiVersion: autoscaling.x-k8s.io/v1beta1\nkind: CapacityBuffer\nmetadata: {{name: burst}}\nspec: {spec}\n"
    loaded = parse_yaml(text, "buffers.yaml")
    assert not loaded.ok
    assert any(p.detail.startswith(expected) and p.source == "buffers.yaml" for p in loaded.problems), [
        p.detail for p in loaded.problems
    ]


def test_a_podtemplate_without_containers_is_a_problem_naming_the_field() -> None:
    text = "apiVersion: v1\nkind: PodTemplate\nmetadata: {name: t}\ntemplate: {spec: {containers: []}}\n"
    loaded = parse_yaml(text, "t.yaml")
    assert [p.detail for p in loaded.problems] == [
        "PodTemplate/t: template.spec.containers: is required: a pod needs at least one container"
    ]


def test_an_unknown_buffer_field_warns_and_is_dropped() -> None:
    loaded = parse_yaml(BUFFER.replace("replicas: 4", "replicas: 4\n  replica: 5"), "b.yaml")
    assert loaded.ok
    assert [w.path for w in loaded.warnings] == ["spec.replica"]


def test_a_buffer_without_spec_and_a_podtemplate_without_template_are_problems_naming_the_field() -> None:
    text = (
        "apiVersion: autoscaling.x-k8s.io/v1beta1\nkind: CapacityBuffer\nmetadata: {name: b}\n---\n"
        "apiVersion: v1\nkind: PodTemplate\nmetadata: {name: t}\n"
    )
    assert [p.detail for p in parse_yaml(text, "x.yaml").problems] == [
        "CapacityBuffer/b: spec: is required",
        "PodTemplate/t: template: is required",
    ]


@pytest.mark.parametrize(
    ("strategy", "warned"),
    [("nodewright.io/standby-capacity", False), ("buffer.gke.io/standby-capacity", True)],
    ids=["nodewrights-standby", "another-implementations"],
)
def test_the_standby_strategy_is_accepted_and_another_warns_that_nodewright_leaves_it(
    strategy: str, warned: bool
) -> None:
    text = BUFFER.replace("replicas: 4", f"replicas: 4\n  provisioningStrategy: {strategy}")
    loaded = parse_yaml(TEMPLATE + "---\n" + text, "b.yaml")
    assert loaded.ok, loaded.problems
    (buffer,) = (d.model for d in loaded.of_kind(CAPACITYBUFFER))
    assert isinstance(buffer, CapacityBuffer)
    assert buffer.provisioning_strategy == strategy
    assert [w.path for w in loaded.warnings] == (["spec.provisioningStrategy"] if warned else [])
