"""The CRDs' CEL rules at `kubectl apply`: the API emulator refuses what kube-apiserver refuses.

Karpenter's NodePool and EC2NodeClass CRDs (deploy/crds/, as Karpenter ships them) carry rules
the OpenAPI part cannot say: an `In` requirement needs a value, `Gt`/`Lt` one non-negative integer,
`minValues` at most the values given, the `karpenter.sh/nodepool` key is reserved, a budget's
schedule comes with its duration, an EC2NodeClass names a role or an instance profile (one), and
transition rules keep `nodeClassRef`'s group and kind, and the node class's identity kind, as they
were. A manifest a real cluster refuses must not be accepted by the emulator every Kubernetes
figure is measured through.

Real: kubectl (apply, apply --dry-run=server), the emulator's apiextensions.k8s.io/v1 and custom
objects with its CEL evaluation (`nodewright.inmemory.apicel`). Observed: kubectl's exit status
and error, and what the emulator stores.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nodewright.inmemory.apiserver import ApiServer
from tests.kubectl.conftest import Kubectl

pytestmark = pytest.mark.integration


NODEPOOL = """apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: {name}}}
spec:
  template:
    spec:
      nodeClassRef: {{group: {group}, kind: EC2NodeClass, name: default}}
      requirements:
{requirements}
{extra}"""

ON_DEMAND = "        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}"


def _nodepool(
    tmp_path: Path, name: str, requirements: str = ON_DEMAND, extra: str = "", group: str = "karpenter.k8s.aws"
) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(NODEPOOL.format(name=name, group=group, requirements=requirements, extra=extra))
    return path


def _nodeclass(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(f"apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata: {{name: {name}}}\nspec:\n{body}")
    return path


DISCOVERY = "[{tags: {karpenter.sh/discovery: my-cluster}}]"
SUBNETS = f"  subnetSelectorTerms: {DISCOVERY}\n  securityGroupSelectorTerms: {DISCOVERY}\n"


REQUIREMENT = 'spec.template.spec.requirements[0]: Invalid value: "object": '
GT_LT = "requirements operator 'Gt' or 'Lt' must have a single positive integer value"
DISRUPTION = "  disruption:\n    consolidateAfter: 0s\n    budgets: [{nodes: '%s', schedule: '0 9 * * mon-fri'%s}]\n"


@pytest.mark.parametrize(
    ("requirements", "extra", "error"),
    [
        (
            "        - {key: karpenter.sh/capacity-type, operator: In, values: []}",
            "",
            REQUIREMENT + "requirements with operator 'In' must have a value defined",
        ),
        ("        - {key: karpenter.k8s.aws/instance-cpu, operator: Gt, values: ['4', '8']}", "", REQUIREMENT + GT_LT),
        ("        - {key: karpenter.k8s.aws/instance-cpu, operator: Lt, values: ['-1']}", "", REQUIREMENT + GT_LT),
        ("        - {key: karpenter.k8s.aws/instance-cpu, operator: Gt, values: [four]}", "", REQUIREMENT + GT_LT),
        (
            "        - {key: karpenter.k8s.aws/instance-family, operator: In, values: [m5, c5], minValues: 3}",
            "",
            REQUIREMENT + "requirements with 'minValues' must have at least that many values specified in the",
        ),
        (
            "        - {key: karpenter.sh/nodepool, operator: In, values: [other]}",
            "",
            'requirements[0].key: Invalid value: "string": label "karpenter.sh/nodepool" is restricted',
        ),
        (
            ON_DEMAND,
            DISRUPTION % ("10%", ""),
            "spec.disruption.budgets[0]: Invalid value: \"object\": 'schedule' must be set with 'duration'",
        ),
    ],
    ids=[
        "in-without-values", "gt-two-values", "lt-negative", "gt-not-a-number", "min-values", "reserved-key",
        "schedule-without-duration",
    ],
)  # fmt: skip
def test_a_nodepool_breaking_a_rule_is_refused_and_not_stored(
    karpenter_crds: Kubectl, server: ApiServer, tmp_path: Path, requirements: str, extra: str, error: str
) -> None:
    refused = karpenter_crds("apply", "-f", str(_nodepool(tmp_path, "bad", requirements, extra)))

    assert refused.code == 1
    assert 'The NodePool "bad" is invalid: ' in refused.err
    assert error in refused.err
    assert server.custom_objects("karpenter.sh", "v1", "nodepools") == []


def test_rules_that_hold_admit_the_nodepool(karpenter_crds: Kubectl, server: ApiServer, tmp_path: Path) -> None:
    requirements = "\n".join(
        [
            ON_DEMAND,
            "        - {key: karpenter.k8s.aws/instance-cpu, operator: Gt, values: ['3']}",
            "        - {key: karpenter.k8s.aws/instance-family, operator: In, values: [m5, c5, r5], minValues: 2}",
            "        - {key: karpenter.k8s.aws/instance-generation, operator: Exists}",
        ]
    )
    extra = DISRUPTION % ("0", ", duration: 8h")

    assert karpenter_crds.ok("apply", "-f", str(_nodepool(tmp_path, "good", requirements, extra))).out.strip() == (
        "nodepool.karpenter.sh/good created"
    )
    assert [p["metadata"]["name"] for p in server.custom_objects("karpenter.sh", "v1", "nodepools")] == ["good"]


def test_transition_rules_keep_the_node_class_reference(
    karpenter_crds: Kubectl, server: ApiServer, tmp_path: Path
) -> None:
    karpenter_crds.ok("apply", "-f", str(_nodepool(tmp_path, "pool")))
    elsewhere = _nodepool(tmp_path, "pool", group="example.com")

    dry = karpenter_crds("apply", "--dry-run=server", "-f", str(elsewhere))
    refused = karpenter_crds("apply", "-f", str(elsewhere))

    for answer in (dry, refused):
        assert answer.code == 1
        assert 'spec.template.spec: Invalid value: "object": nodeClassRef.group is immutable' in answer.err
    (pool,) = server.custom_objects("karpenter.sh", "v1", "nodepools")
    assert pool["spec"]["template"]["spec"]["nodeClassRef"]["group"] == "karpenter.k8s.aws"
    # The same reference with another requirement is an ordinary update.
    changed = _nodepool(tmp_path, "pool", ON_DEMAND.replace("on-demand", "spot"))
    assert karpenter_crds.ok("apply", "-f", str(changed)).out.strip() == "nodepool.karpenter.sh/pool configured"


def test_an_ec2nodeclass_names_one_identity_and_keeps_its_kind(
    karpenter_crds: Kubectl, server: ApiServer, tmp_path: Path
) -> None:
    alias = "  amiSelectorTerms: [{alias: al2023@latest}]\n" + SUBNETS
    both = _nodeclass(tmp_path, "both", alias + "  role: KarpenterNodeRole\n  instanceProfile: KarpenterNodeProfile\n")
    neither = _nodeclass(tmp_path, "neither", alias)
    no_family = _nodeclass(
        tmp_path, "nofamily", "  amiSelectorTerms: [{id: ami-0123456789abcdef0}]\n" + SUBNETS + "  role: R\n"
    )

    for path in (both, neither):
        refused = karpenter_crds("apply", "-f", str(path))
        assert refused.code == 1
        assert "spec: Invalid value: \"object\": must specify exactly one of ['role', 'instanceProfile']" in refused.err
    refused = karpenter_crds("apply", "-f", str(no_family))
    assert refused.code == 1
    assert (
        'spec: Invalid value: "object": amiFamily must be set if amiSelectorTerms does not contain an alias'
        in refused.err
    )
    assert server.custom_objects("karpenter.k8s.aws", "v1", "ec2nodeclasses") == []

    karpenter_crds.ok(
        "apply", "-f", str(_nodeclass(tmp_path, "nc", alias + "  instanceProfile: KarpenterNodeProfile\n"))
    )
    to_role = karpenter_crds("apply", "-f", str(_nodeclass(tmp_path, "nc", alias + "  role: KarpenterNodeRole\n")))
    assert to_role.code == 1
    assert "changing from 'instanceProfile' to 'role' is not supported" in to_role.err
    (stored,) = server.custom_objects("karpenter.k8s.aws", "v1", "ec2nodeclasses")
    assert stored["spec"]["instanceProfile"] == "KarpenterNodeProfile"
    assert "role" not in stored["spec"]


WIDGETS = """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: widgets.example.com}}
spec:
  group: example.com
  scope: Cluster
  names: {{plural: widgets, kind: Widget}}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                sizes:
                  type: array
                  items:
                    type: object
                    x-kubernetes-validations: [{{rule: {item}, message: each}}]
                    properties: {{n: {{type: integer}}}}
              x-kubernetes-validations: [{{rule: {spec}}}]
"""


@pytest.mark.parametrize(
    ("spec", "item", "error"),
    [
        ("'self.sizes.size() >'", "'self.n > 0'", "spec.versions[0].schema.openAPIV3Schema.properties[spec]"
         '.x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{Rule:"self.sizes.size() >", '
         'Message:""}: compilation failed: ERROR: <input>:1:'),
        ("'has(self.sizes)'", "'self.n > (0'", "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties"
         '[sizes].items.x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{Rule:'
         '"self.n > (0", Message:"each"}: compilation failed'),
        ("''", "'self.n > 0'", "spec.versions[0].schema.openAPIV3Schema.properties[spec]"
         ".x-kubernetes-validations[0].rule: Required value: rule is not specified"),
    ],
)  # fmt: skip
def test_a_crd_whose_rule_does_not_parse_is_refused_at_creation(
    kubectl: Kubectl, server: ApiServer, tmp_path: Path, spec: str, item: str, error: str
) -> None:
    # kube-apiserver compiles every rule when the CRD is written: a rule that cannot parse
    # refuses the CRD, not every object written under it later.
    path = tmp_path / "widgets.yaml"
    path.write_text(WIDGETS.format(spec=spec, item=item))

    refused = kubectl("apply", "-f", str(path))

    assert refused.code == 1
    assert 'The CustomResourceDefinition "widgets.example.com" is invalid: ' in refused.err
    assert error in refused.err
    assert kubectl("get", "crd", "widgets.example.com").code == 1

    path.write_text(WIDGETS.format(spec="'has(self.sizes)'", item="'self.n > 0'"))
    assert kubectl.ok("apply", "-f", str(path)).out.strip() == (
        "customresourcedefinition.apiextensions.k8s.io/widgets.example.com created"
    )
