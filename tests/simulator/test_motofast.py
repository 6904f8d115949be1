"""moto_faster(): each replaced piece of moto answers exactly what moto's own code answers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import botocore.session
import pytest
from botocore.serialize import create_serializer
from moto import mock_aws
from moto.core.parse import EC2QueryParser, QueryParser
from moto.ec2.models.core import TaggedEC2Resource
from moto.events.utils import EventTemplateParser
from werkzeug.datastructures import CombinedMultiDict, ImmutableMultiDict, MultiDict

from nodewright.simulator.standins.motofast import moto_faster


def _fleet_request() -> dict[str, Any]:
    """A CreateFleet request like the provisioner's: many overrides, tags, nested structures."""
    overrides = [
        {"InstanceType": f"m{g}.{size}", "AvailabilityZone": f"us-east-1{zone}", "Priority": float(i)}
        for i, (g, size, zone) in enumerate(
            (g, size, zone) for g in (5, 6, 7) for size in ("large", "xlarge", "2xlarge") for zone in "abcd"
        )
    ]
    return {
        "Type": "instant",
        "TargetCapacitySpecification": {"TotalTargetCapacity": 1, "DefaultTargetCapacityType": "spot"},
        "SpotOptions": {"AllocationStrategy": "price-capacity-optimized"},
        "LaunchTemplateConfigs": [
            {
                "LaunchTemplateSpecification": {"LaunchTemplateName": "lt-1", "Version": "$Latest"},
                "Overrides": overrides,
            },
            {
                "LaunchTemplateSpecification": {"LaunchTemplateName": "lt-10", "Version": "1"},
                "Overrides": overrides[:3],
            },
        ],
        "TagSpecifications": [
            {"ResourceType": "instance", "Tags": [{"Key": f"k{i}", "Value": f"v{i}"} for i in range(12)]},
            {"ResourceType": "fleet", "Tags": [{"Key": "a", "Value": "b"}]},
        ],
    }


def _parse(operation: str, params: dict[str, Any], values: Any) -> dict[str, Any]:
    model = botocore.session.get_session().get_service_model("ec2").operation_model(operation)
    return EC2QueryParser(model).parse(
        {"method": "POST", "values": values, "headers": {}, "body": b"", "url_path": "/", "url_params": {}}  # type: ignore[typeddict-item]
    )


def _query_values(operation: str, params: dict[str, Any]) -> dict[str, str]:
    model = botocore.session.get_session().get_service_model("ec2").operation_model(operation)
    body = create_serializer("ec2").serialize_to_request(params, model)["body"]
    assert isinstance(body, dict)
    return {str(k): str(v) for k, v in body.items()}


@pytest.mark.parametrize("operation", ["CreateFleet", "DescribeInstances", "TerminateInstances"])
def test_query_parsing_is_unchanged(operation: str) -> None:
    params: dict[str, Any] = {
        "CreateFleet": _fleet_request(),
        "DescribeInstances": {"InstanceIds": [f"i-{i:017x}" for i in range(11)], "MaxResults": 50},
        "TerminateInstances": {"InstanceIds": ["i-0abc", "i-0abd"]},
    }[operation]
    flat = _query_values(operation, params)
    shapes = (
        ImmutableMultiDict(flat),
        CombinedMultiDict([ImmutableMultiDict({}), ImmutableMultiDict(flat)]),
    )
    cold = [_parse(operation, params, values) for values in shapes]
    with moto_faster():
        warm = [_parse(operation, params, values) for values in shapes]
    assert warm == cold
    assert cold[0]  # the request did parse into something


def test_prefix_question_matches_the_scan_for_every_prefix() -> None:
    keys = ["A.1.B", "A.10.B", "A.2", "Ab", "B", "B.1.C.1", "C.member.3"]
    prefixes = ["", "A", "A.1", "A.1.", "A.10", "A.11", "A.2.x", "Ab", "B.1.C.1", "B.2", "C", "D", "0", "~"]
    parser = QueryParser(botocore.session.get_session().get_service_model("ec2").operation_model("CreateFleet"))
    original = QueryParser.__dict__["_gonna_recurse"]
    for values in (
        ImmutableMultiDict(dict.fromkeys(keys, "x")),
        CombinedMultiDict([ImmutableMultiDict(dict.fromkeys(keys, "x"))]),
    ):
        cold = [original(parser, values, p) for p in prefixes]
        with moto_faster():
            warm = [parser._gonna_recurse(values, p) for p in prefixes]
        assert warm == cold


def test_a_mutable_parameter_dict_is_answered_by_moto() -> None:
    parser = QueryParser(botocore.session.get_session().get_service_model("ec2").operation_model("CreateFleet"))
    values: MultiDict[str, str] = MultiDict({"A.1": "x"})
    with moto_faster():
        assert parser._gonna_recurse(values, "A.1") is False
        values.add("B.1", "y")  # a mutable dict may change between questions: never cached
        assert parser._gonna_recurse(values, "B") is False
        assert parser._gonna_recurse(values, "C") is True


def test_event_input_transformation_is_unchanged_and_compiled_once() -> None:
    event = {
        "version": "0",
        "id": "e-1",
        "detail-type": "EC2 Spot Instance Interruption Warning",
        "source": "aws.ec2",
        "account": "123456789012",
        "time": 1767571200.0,
        "region": "us-east-1",
        "resources": ["arn:aws:ec2:us-east-1:123456789012:instance/i-0abc"],
        "detail": {"instance-id": "i-0abc", "instance-action": "terminate"},
        "ingestion-time": 1.0,
    }
    paths = {"id": "$.detail.instance-id", "kind": "$.detail-type"}
    template = '{"instance": "<id>", "kind": "<kind>"}'
    cold = [EventTemplateParser.parse("", {}, event), EventTemplateParser.parse(template, paths, event)]
    with moto_faster():
        warm = [EventTemplateParser.parse("", {}, event), EventTemplateParser.parse(template, paths, event)]
        again = [EventTemplateParser.parse("", {}, event), EventTemplateParser.parse(template, paths, event)]
        from jsonpath_ng.ext import parse

        assert parse("$.detail-type") is parse("$.detail-type")
    assert warm == cold == again


@pytest.fixture
def ec2(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(key, "testing")
    with mock_aws():
        yield boto3.client("ec2", region_name="us-east-1")


def test_tags_of_a_resource_are_unchanged(ec2: Any) -> None:
    from moto.ec2.models import ec2_backends

    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    launched = ec2.run_instances(
        ImageId=image,
        MinCount=3,
        MaxCount=3,
        TagSpecifications=[
            {"ResourceType": "instance", "Tags": [{"Key": "b", "Value": "2"}, {"Key": "a", "Value": "1"}]}
        ],
    )["Instances"]
    untagged = ec2.run_instances(ImageId=image, MinCount=1, MaxCount=1)["Instances"][0]["InstanceId"]
    ids = [i["InstanceId"] for i in launched]
    ec2.create_tags(Resources=ids[:1], Tags=[{"Key": "c", "Value": "3"}])
    backend = ec2_backends["123456789012"]["us-east-1"]
    resources = [backend.get_instance(i) for i in (*ids, untagged)]
    resources.append(backend.describe_vpcs()[0])
    original = TaggedEC2Resource.__dict__["get_tags"]
    cold = [original(r) for r in resources]
    described = ec2.describe_instances(InstanceIds=ids)["Reservations"]
    with moto_faster():
        warm = [r.get_tags() for r in resources]
        assert ec2.describe_instances(InstanceIds=ids)["Reservations"] == described
    assert warm == cold
    assert [t["key"] for t in cold[0]] == ["b", "a", "c"]
    assert cold[3] == []


def test_a_glob_like_id_is_answered_by_moto(ec2: Any) -> None:
    from moto.ec2.models import ec2_backends

    backend = ec2_backends["123456789012"]["us-east-1"]
    backend.create_tags(["i-0abc", "i-0abd"], {"k": "v"})

    class Fake(TaggedEC2Resource):
        def __init__(self, id: str) -> None:
            self.id = id
            self.ec2_backend = backend

    original = TaggedEC2Resource.__dict__["get_tags"]
    cold = [original(Fake(i)) for i in ("i-0ab?", "i-0ab*", "i-0abc", "")]
    with moto_faster():
        warm = [Fake(i).get_tags() for i in ("i-0ab?", "i-0ab*", "i-0abc", "")]
    assert warm == cold
    assert len(cold[0]) == 2


def test_everything_is_restored_on_exit() -> None:
    import jsonpath_ng.ext
    import moto.core.responses as responses
    from moto.core.serialize import AttributePicker
    from moto.ec2.models.instances import InstanceBackend

    places = [
        (QueryParser, "_gonna_recurse"),
        (jsonpath_ng.ext, "parse"),
        (TaggedEC2Resource, "get_tags"),
        (responses, "method_names_from_class"),
        (InstanceBackend, "all_reservations"),
        (InstanceBackend, "get_instance"),
        (InstanceBackend, "get_reservations_by_instance_ids"),
        (InstanceBackend, "get_multi_instances_by_id"),
        (AttributePicker, "__call__"),
    ]
    before = [vars(owner)[name] for owner, name in places]
    with moto_faster():
        assert all(vars(owner)[name] is not was for (owner, name), was in zip(places, before, strict=True))
    assert [vars(owner)[name] for owner, name in places] == before


def three_reservations(ec2: Any) -> tuple[list[str], Any]:
    """Six instances in three reservations, the first terminated; their ids and moto's backend."""
    from moto.ec2.models import ec2_backends

    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    ids = [
        i["InstanceId"] for _ in range(3) for i in ec2.run_instances(ImageId=image, MinCount=2, MaxCount=2)["Instances"]
    ]
    ec2.terminate_instances(InstanceIds=ids[:1])
    return ids, ec2_backends["123456789012"]["us-east-1"]


def test_reservation_copies_are_unchanged(ec2: Any) -> None:
    from moto.ec2.models.instances import InstanceBackend

    ids, backend = three_reservations(ec2)
    original = InstanceBackend.__dict__["all_reservations"]
    filters = {"instance-state-name": ["running"]}

    def seen(reservations: list[Any]) -> list[tuple[type, dict[str, Any]]]:
        return [(type(r), dict(vars(r))) for r in reservations]

    cold = [seen(original(backend)), seen(original(backend, filters))]
    described = ec2.describe_instances(InstanceIds=ids[1:4])["Reservations"]
    with moto_faster():
        warm = [seen(backend.all_reservations()), seen(backend.all_reservations(filters))]
        copies = backend.all_reservations()
        assert backend.get_instance(ids[2]) is backend.get_instance_by_id(ids[2])
        assert ec2.describe_instances(InstanceIds=ids[1:4])["Reservations"] == described
    assert warm == cold
    assert len(cold[0]) == 3
    assert all(c is not r for c, r in zip(copies, backend.reservations.values(), strict=True))  # copies, as before


def test_handler_names_are_unchanged() -> None:
    import moto.core.responses as responses
    from moto.ec2.responses import EC2Response

    cold = responses.method_names_from_class(EC2Response)
    with moto_faster():
        warm = responses.method_names_from_class(EC2Response)
        warm.append("changed by a caller")
        again = responses.method_names_from_class(EC2Response)
    assert warm[:-1] == cold == again


def test_instances_found_by_id_are_unchanged(ec2: Any) -> None:
    from moto.ec2.exceptions import InvalidInstanceIdError
    from moto.ec2.models.instances import InstanceBackend

    ids, backend = three_reservations(ec2)
    original = InstanceBackend.__dict__["get_instance"]
    cold = [original(backend, i) for i in ids]
    with moto_faster():
        warm = [backend.get_instance(i) for i in ids]
        with pytest.raises(InvalidInstanceIdError):
            backend.get_instance("i-00000000000000000")
        assert ec2.describe_instance_attribute(InstanceId=ids[3], Attribute="userData")["InstanceId"] == ids[3]
    assert all(w is c for w, c in zip(warm, cold, strict=True))
    with pytest.raises(InvalidInstanceIdError):
        original(backend, "i-00000000000000000")


def test_reservations_by_instance_ids_are_unchanged(ec2: Any) -> None:
    from moto.ec2.exceptions import InvalidInstanceIdError
    from moto.ec2.models.instances import InstanceBackend

    ids, backend = three_reservations(ec2)
    original = InstanceBackend.__dict__["get_reservations_by_instance_ids"]
    asked = [ids[1:4], [ids[5], ids[0]], ids[2:3], ids]
    filters = {"instance-state-name": ["running"]}

    def seen(reservations: list[Any]) -> list[tuple[type, dict[str, Any]]]:
        return [(type(r), dict(vars(r))) for r in reservations]

    cold = [seen(original(backend, i)) for i in asked] + [seen(original(backend, ids, filters))]
    described = ec2.describe_instances(InstanceIds=ids[1:4])["Reservations"]
    with moto_faster():
        warm = [seen(backend.get_reservations_by_instance_ids(i)) for i in asked]
        warm.append(seen(backend.get_reservations_by_instance_ids(ids, filters)))
        with pytest.raises(InvalidInstanceIdError) as unknown:
            backend.get_reservations_by_instance_ids([ids[1], "i-00000000000000000"])
        assert ec2.describe_instances(InstanceIds=ids[1:4])["Reservations"] == described
    assert warm == cold
    assert [len(r) for r in cold] == [2, 2, 1, 3, 3]  # the terminated one filtered out of the last
    with pytest.raises(InvalidInstanceIdError) as moto_says:
        original(backend, [ids[1], "i-00000000000000000"])
    assert str(unknown.value) == str(moto_says.value)
    assert len(backend.reservations[next(iter(backend.reservations))].instances) == 2  # originals untouched


def test_instances_by_ids_are_unchanged(ec2: Any) -> None:
    from moto.ec2.exceptions import InvalidInstanceIdError
    from moto.ec2.models.instances import InstanceBackend

    ids, backend = three_reservations(ec2)
    original = InstanceBackend.__dict__["get_multi_instances_by_id"]
    asked = [ids, ids[::-1], ids[2:3]]
    cold = [original(backend, i) for i in asked]
    statuses = ec2.describe_instance_status(InstanceIds=ids[1:], IncludeAllInstances=True)["InstanceStatuses"]
    with moto_faster():
        warm = [backend.get_multi_instances_by_id(i) for i in asked]
        with pytest.raises(InvalidInstanceIdError):
            backend.get_multi_instances_by_id([ids[1], "i-00000000000000000"])
        again = ec2.describe_instance_status(InstanceIds=ids[1:], IncludeAllInstances=True)["InstanceStatuses"]
    for w, c in zip(warm, cold, strict=True):
        assert len(w) == len(c)
        assert all(a is b for a, b in zip(w, c, strict=True))
    assert again == statuses
    assert len(cold[0]) == 6


def test_serialized_responses_are_unchanged(ec2: Any) -> None:
    """Responses of several shapes (nested structures, lists, tags, errors) read the same."""
    sqs = boto3.client("sqs", region_name="us-east-1")
    ids, _ = three_reservations(ec2)
    ec2.create_tags(Resources=ids[1:3], Tags=[{"Key": "nodewright.io/nodeclaim", "Value": "claim-1"}])
    queue = sqs.create_queue(QueueName="q")["QueueUrl"]
    sqs.send_message(
        QueueUrl=queue, MessageBody="hello", MessageAttributes={"a": {"DataType": "String", "StringValue": "b"}}
    )

    def answers() -> list[Any]:
        out: list[Any] = [
            ec2.describe_instances(),
            ec2.describe_instances(InstanceIds=ids[1:3]),
            ec2.describe_instance_status(InstanceIds=ids[1:], IncludeAllInstances=True),
            ec2.describe_instance_attribute(InstanceId=ids[2], Attribute="userData"),
            ec2.describe_subnets(),
            ec2.describe_instance_types(InstanceTypes=["m5.large", "c6g.xlarge"]),
            sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["All"]),
        ]
        try:
            ec2.describe_instances(InstanceIds=["i-00000000000000000"])
        except Exception as error:  # moto's error, serialized
            out.append(getattr(error, "response", {}).get("Error"))
        for one in out:
            if isinstance(one, dict):
                one.pop("ResponseMetadata", None)
        return out

    cold = answers()
    with moto_faster():
        warm = answers()
    assert warm == cold
    assert cold[-1]["Code"] == "InvalidInstanceID.NotFound"
    assert len(cold[2]["InstanceStatuses"]) == 5
