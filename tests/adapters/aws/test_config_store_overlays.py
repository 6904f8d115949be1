"""NodeOverlays in the DynamoDB config table (configSource=dynamodb), against moto's DynamoDB.

Faked: DynamoDB (`mock_aws`). Observed: an overlay applied with the store reads back through
`StoredConfiguration` (as the functions read their configuration) as the same model, and prices
the instance types `pool_capacities` hands the controllers.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from nodewright.adapters.aws.config_store import ConfigStore, create_table
from nodewright.config import parse_yaml
from nodewright.controllers.configuration import StoredConfiguration
from nodewright.controllers.observe import RecordingObserver
from nodewright.controllers.provisionoptions import pool_capacities
from nodewright.inmemory.catalog import FixedCatalog
from nodewright.model.nodeoverlay import NodeOverlay
from tests.builders import instance_type

TABLE = "nodewright-config"
MANIFESTS = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]
---
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: enterprise-discount}
spec:
  requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]
  priceAdjustment: "-5%"
"""


@pytest.fixture
def store() -> Iterator[ConfigStore]:
    with mock_aws():
        client: Any = boto3.client("dynamodb", region_name="us-east-1")
        create_table(client, TABLE)
        yield ConfigStore(TABLE, client=client)


def test_an_overlay_in_the_config_table_prices_what_the_controllers_plan_with(store: ConfigStore) -> None:
    documents = parse_yaml(MANIFESTS, "config.yaml").require()
    store.apply(documents)
    observer = RecordingObserver()
    config = StoredConfiguration(lambda: [stored.document for stored in store.list()], observer)

    nodepools, nodeclasses = config.load()

    (overlay,) = config.overlays()
    assert overlay == next(d.model for d in documents if isinstance(d.model, NodeOverlay))
    (pool,) = pool_capacities(nodepools, nodeclasses, FixedCatalog((instance_type("m5.large", price=0.1),)), [overlay])
    assert {round(o.price, 4) for o in pool.instance_types[0].offerings} == {0.095}
