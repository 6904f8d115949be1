"""Scenario files for `nodewright simulate`: what the simulated cluster runs and what happens to it.

A scenario is one YAML document (see examples/scenarios/ for complete ones):

    apiVersion: nodewright.io/v1alpha1    # optional; with kind, lets `nodewright plan -f` skip the file
    kind: Scenario
    name: spot-storm                      # required; names the report directory
    description: 30% of spot nodes warned within 5 minutes
    duration: 40m                         # required: virtual time to simulate
    seed: 7                               # which nodes are interrupted, instance ids (default 1)
    start: "2026-01-05T00:00:00Z"         # the virtual clock's start (a Monday, 00:00 UTC)
    boot_delay: 35s                       # launch -> Ready node (default 35s)
    start_delay: 20s                      # StartInstances of a standby instance -> Ready (default 20s)
    zones: [us-east-1a, us-east-1b, us-east-1c]
    nodepools: [../nodepools/default.yaml]   # paths (relative to this file) or inline documents
    nodeclasses: []                       # the same; either list may hold both kinds, and
                                          # CapacityBuffers with the PodTemplates they name
    nodepool_changes:                     # a NodePool replaced at a time (replicas, template)
      - {at: 20m, manifest: {apiVersion: karpenter.sh/v1, kind: NodePool, ...}}
    workloads:
      - manifest: {apiVersion: apps/v1, kind: Deployment, ...}   # or a path; may hold several
        replicas:                         # optional schedule; each entry holds until the next
          - {at: 0s, replicas: 0}
          - {at: 1m, replicas: 1000}
          - {at: 2h, diurnal: {min: 200, max: 2000, period: 24h, peak: 14h, every: 5m}}
      - {at: 10m, manifest: {apiVersion: apps/v1, kind: DaemonSet, ...}}   # created at 10m
    pdbs: [ {apiVersion: policy/v1, kind: PodDisruptionBudget, ...} ]
    devices: [ {apiVersion: resource.k8s.io/v1, kind: ResourceClaimTemplate, ...}, ../dra.yaml ]  # DRA
    initial_nodes:                        # Ready at the start, launched by another autoscaler
      - {instance_type: m5.xlarge, zone: us-east-1a, capacity_type: on-demand, count: 3,
         labels: {karpenter.sh/nodepool: default}}   # no Nodewright tag or label
    interruptions:
      - {at: 10m, fraction: 0.3, within: 5m}   # or count: 3; optional nodepool, zone
    capacity_errors:
      - {instance_type: "*", zone: us-east-1a, capacity_type: spot, from: 0s, until: 2h}
    node_failures:                        # nodes that break (world/failures.py); optional count,
      - {at: 5m, condition: Ready, status: Unknown}   # nodepool, zone; Ready False or Unknown is
      - {at: 9m, condition: KernelReady, status: "False"}   # NotReady; others the node
      - {at: 12m, status_check: system}   # monitoring agent's; or an impaired EC2 status check
    repair_max_unhealthy_percent: 20      # node repair's guard, as the deploy key (default 20)
    ami_releases: [2h]                    # AWS publishes a new EKS-optimized AMI: the aliases
                                          # (al2023@latest, ...) resolve to new images from then on
    node_roles: [KarpenterNodeRole-my-cluster]   # the deploy key nodeRoles: an EC2NodeClass's role
                                         # gets its own instance profile (moto IAM); another role
                                         # is refused. Absent: every role uses the stack's profile
    capacity_reservations:                # what DescribeCapacityReservations answers; launches
      - {id: cr-0a1b2c3d4e5f60718, instance_type: m5.xlarge, zone: us-east-1a, count: 3,
         match: targeted, tags: {team: ml}}   # also owner (12 digits), from, until, interruptible
      - {id: cr-0b1c2d3e4f5a60719, type: capacity-block, instance_type: p5.48xlarge,
         zone: us-east-1b, count: 2, until: 3h}   # a block must end; EC2 warns 40m before
    functions:
      provisioner: {rate: 1m, timeout: 68s}   # also memory (MB), idle_exit (the economy key),
                                            # single_flight (reserved concurrency 1, Lambda's retries)
      consolidator: {rate: 1m, timeout: 120s}
      interruption: {timeout: 30s}
    consolidation: nodewright            # karpenter | nodewright | off
    consolidation_min_savings: 0.01      # stability guard, $/h (default 0)
    consolidation_min_savings_percent: 5 # and percent of the removed nodes' price (default 0)
    spot_to_spot_consolidation: false    # the deploy key spotToSpotConsolidation (default true)
    deletion_cost_steering: false        # the deploy key deletionCostSteering (default true)
    spot_pool_depth: {min: 5, max: 500}  # spot instances per (type, zone) pool, drawn per seed
    kube_api: inmemory                   # or http: the functions read the cluster through the real
                                         # Kubernetes adapter, served over local HTTP
    cpu_charge: 1.0                      # the clock also moves by the CPU the handlers spend, times
                                         # this (default 0: computing takes no virtual time)
    faults:                              # failures as AWS and EKS produce them (see "Faults" below)
      - {kind: kube-5xx, rate: 0.05, verbs: [list, evict], from: 10m, until: 1h}
      - {kind: ec2-throttle, rate: 0.2, operations: [CreateFleet]}
      - {kind: crash, rate: 0.1, functions: [provisioner]}

Faults. Each entry injects one kind of failure with probability `rate` per opportunity, only
between `from` and `until` (default: the whole run), drawn from the scenario seed and the entry's
position, so a seed replays the same faults for the same calls:

    kind                  opportunity                 what the functions meet
    kube-5xx              a Kubernetes request        HTTP `status` (default 503) on `verbs`
    kube-429              a Kubernetes request        HTTP 429 with Retry-After `retry_after` (1s)
    kube-timeout          a Kubernetes request        no answer: the connection is dropped
    ec2-throttle          an EC2 call of `operations` RequestLimitExceeded (default operations:
                                                      CreateFleet, TerminateInstances, Describe*)
    ec2-partial-fleet     a CreateFleet               fewer instances than asked, plus Errors
    dynamodb-throttle     a DynamoDB call             `code` (ProvisionedThroughputExceededException
                                                      or ThrottlingException)
    dynamodb-conditional  a conditional write         the write lands but its answer is lost; the
                                                      SDK's retry meets ConditionalCheckFailed
    crash                 an effect (an AWS or         the invocation of `functions` that made it
                          Kubernetes write)           dies right after it, as a dying Lambda
    timeout               an invocation of `functions` killed at a random point before its deadline
    sqs-duplicate         an interruption message     delivered a second time, later
    sqs-reorder           an interruption message     held back up to a minute, delivered after later ones

`verbs` are list, watch, evict and patch (default all four). With `kube_api: inmemory` the
in-memory cluster does with those answers what the real adapter does (retries, then raises its
error); watch faults need `kube_api: http`, where the API emulator answers them to the real
adapter. How each kind enters and what is counted: nodewright/simulator/standins/faults.py. summary.json's
`faults` block has, per kind, what was injected and what it cost, and an audit of duplicate and
orphan instances and claims 15 minutes after the last fault window (`Scenario.faults_end`).

Validation reports every problem at once, each naming the file, line and field, like the rest of
the project's configuration (`nodewright.config.problems`); NodePools and EC2NodeClasses go through
the same parsers as `nodewright nodepool validate`. Pure apart from reading the referenced files.

Which file does what
--------------------
    __init__.py   this format, `load_scenario` and `parse_scenario` (the entry points)
    model.py      the schema: `Scenario` and its entries as frozen dataclasses, defaults
    reader.py     the document: top-level keys, NodePools/EC2NodeClasses, cross-checks,
                  every problem with its file, document, field and line
    workloads.py  reading `workloads` and `pdbs` manifests and replica schedules
    entries.py    reading interruptions, initial nodes, capacity errors, faults, functions
    fields.py     durations, bounded numbers, lists of known names
    workload.py   the expansion: a workload's replica schedule (fixed segments, diurnal
                  curves) into the times its wanted count changes and the count then
    generate.py   a seeded draw of a realistic day, as a scenario document (`--generate SEED`)

The world (`nodewright.simulator.world`) turns the result into events on the virtual clock.
"""

from __future__ import annotations

from pathlib import Path

from nodewright.config.problems import Problem
from nodewright.simulator.scenario.model import (
    CONSOLIDATION_MODES,
    DEFAULT_SPOT_POOL_DEPTH,
    DEFAULT_START,
    DEFAULT_ZONES,
    DYNAMODB_THROTTLE_CODES,
    EC2_THROTTLED,
    FAULT_KINDS,
    FUNCTIONS,
    KUBE_APIS,
    KUBE_VERBS,
    SCENARIO_API_VERSION,
    SCENARIO_KIND,
    CapacityError,
    Fault,
    FunctionSettings,
    InitialNodes,
    Interruption,
    Scenario,
    ScenarioError,
)
from nodewright.simulator.scenario.reader import ScenarioReader, unsupported
from nodewright.simulator.scenario.workload import Diurnal, Segment, Workload
from nodewright.simulator.scenario.workloads import REPLICATED

__all__ = [
    "CONSOLIDATION_MODES",
    "DEFAULT_SPOT_POOL_DEPTH",
    "DEFAULT_START",
    "DEFAULT_ZONES",
    "DYNAMODB_THROTTLE_CODES",
    "EC2_THROTTLED",
    "FAULT_KINDS",
    "FUNCTIONS",
    "KUBE_APIS",
    "KUBE_VERBS",
    "REPLICATED",
    "SCENARIO_API_VERSION",
    "SCENARIO_KIND",
    "CapacityError",
    "Diurnal",
    "Fault",
    "FunctionSettings",
    "InitialNodes",
    "Interruption",
    "Scenario",
    "ScenarioError",
    "Segment",
    "Workload",
    "load_scenario",
    "parse_scenario",
    "unsupported",
]


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario file; raise ScenarioError listing every problem."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ScenarioError([Problem(str(path), "", "", f"cannot read scenario: {error}")]) from None
    return parse_scenario(text, path)


def parse_scenario(text: str, path: str | Path) -> Scenario:
    """Validate a scenario's text; files it names are read relative to `path`'s directory."""
    reader = ScenarioReader(Path(path))
    scenario = reader.read(text)
    if reader.problems or scenario is None:
        raise ScenarioError(reader.problems)
    return scenario
