"""Resolve an EC2NodeClass's selectors into the subnets, security groups and AMIs a launch uses.

Role: the discovery half of launching, as Karpenter's subnet, security-group and AMI providers do
it, through injected EC2 and SSM clients (boto3 in Lambda, moto or a Stubber in tests).

- Subnets and security groups: one Describe call per selector term (terms are ORed; within a
  term every condition must hold), results joined by id. A term's `id` filters on the id, its
  tags on `tag:<key>` (value `*` means "the key exists", `tag-key`), its `name` on the subnet's
  Name tag or the group's name. Per zone the subnet with the most free IPs wins (ties: lowest id),
  because a launch into a nearly full subnet fails with InsufficientFreeAddressesInSubnet.
- AMIs, one per (architecture, variant). The variant is what an instance type's accelerators
  need (`variant_of`): `standard` (none), `nvidia` (NVIDIA GPUs: the AMI with the driver and the
  container toolkit) or `neuron` (Inferentia/Trainium: the AMI with the Neuron driver); types
  with other accelerators (AMD, Habana) have a variant no alias provides.
  An alias reads AWS's public SSM parameters, as Karpenter does (<v> = standard|nvidia|neuron):
    al2023@latest        /aws/service/eks/optimized-ami/<k8s>/amazon-linux-2023/<arch>/<v>/recommended/image_id
    al2023@v20240807     .../amazon-linux-2023/<arch>/<v>/amazon-eks-node-al2023-<arch>-<v>-<k8s>-v20240807/image_id
    al2@latest           /aws/service/eks/optimized-ami/<k8s>/amazon-linux-2[-arm64]/recommended/image_id
                         .../amazon-linux-2-gpu/recommended/image_id  (x86_64 nvidia and neuron)
    al2@v20240807        .../amazon-linux-2/amazon-eks-node-<k8s>-v20240807/image_id
                         .../amazon-linux-2-arm64/amazon-eks-arm64-node-<k8s>-v20240807/image_id
                         .../amazon-linux-2-gpu/amazon-eks-gpu-node-<k8s>-v20240807/image_id
    bottlerocket@latest  /aws/service/bottlerocket/aws-k8s-<k8s>[-nvidia]/<arch>/latest/image_id
    bottlerocket@v1.20.0 /aws/service/bottlerocket/aws-k8s-<k8s>[-nvidia]/<arch>/1.20.0/image_id  (no "v" in SSM)
                         (the x86_64 standard variant carries the Neuron driver: it serves neuron too)
  (<arch> is x86_64 or arm64; a missing parameter just means no AMI for that architecture and
  variant, so those instance types are not launched). Variants are looked up only when a launch
  needs them (`resolve(nodeclass, variants)`), so a cluster without GPUs reads two parameters.
  id, name, owner and tags terms use DescribeImages (name without owner searches self and
  amazon, as Karpenter does); an ssmParameter term reads that parameter then describes the image.
  Such images serve every variant of their architecture (`ANY_VARIANT`): the NodeClass's owner
  chose them. Across terms the newest image per (architecture, variant) wins, non-deprecated first.

Caching: every result is kept for `ttl` seconds of the injected clock, keyed by the selector
terms themselves (not the NodeClass name), so an edited NodeClass is re-resolved at once.

Errors: a NodeClass whose selectors match no subnet, no security group or no AMI raises
`NodeClassNotResolved` (a LaunchError: launching with it cannot succeed until it is fixed);
AWS errors other than throttling (retried) propagate.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any, TypeVar

from nodewright.adapters.aws.retry import Backoff, error_code
from nodewright.model import labels as wk
from nodewright.model.cluster import ClusterInfo
from nodewright.model.instancetype import InstanceType
from nodewright.model.nodeclass import AMIAlias, AMISelectorTerm, EC2NodeClass, SelectorTerm
from nodewright.model.resources import AMD_GPU, AWS_NEURON, HABANA_GAUDI, NVIDIA_GPU
from nodewright.ports import Clock, LaunchError

T = TypeVar("T")

log = logging.getLogger(__name__)
DEFAULT_TTL_SECONDS = 300.0
# Kubernetes architecture name -> EC2's (in AMI descriptions and SSM paths).
EC2_ARCH = {"amd64": "x86_64", "arm64": "arm64"}
KUBE_ARCH = {ec2: kube for kube, ec2 in EC2_ARCH.items()}
_DEFAULT_IMAGE_OWNERS = ("self", "amazon")
# AMI variants of the EKS-optimized and Bottlerocket aliases.
STANDARD = "standard"
NVIDIA = "nvidia"
NEURON = "neuron"
# The variant of an image chosen by id, name, tags or ssmParameter: it serves every variant.
ANY_VARIANT = ""
ImageKey = tuple[str, str]  # (Kubernetes arch, variant)


class NodeClassNotResolved(LaunchError):
    """The NodeClass's selectors matched nothing usable (no subnet, security group or AMI)."""


@dataclass(frozen=True, slots=True)
class Subnet:
    """A subnet a node can be launched into."""

    id: str
    zone: str
    available_ips: int
    zone_id: str = ""


@dataclass(frozen=True, slots=True)
class Image:
    """An AMI chosen for one architecture (Kubernetes name: amd64 or arm64) and variant.

    `variant` is ANY_VARIANT for images a selector term named (they serve every instance type of
    their architecture), else the alias variant the image was published for.
    """

    id: str
    arch: str
    name: str = ""
    created: str = ""
    deprecated: bool = False
    variant: str = ANY_VARIANT

    @property
    def key(self) -> ImageKey:
        """(arch, variant): where `ResolvedNodeClass.images` keeps it."""
        return (self.arch, self.variant)


@dataclass(frozen=True, slots=True)
class ResolvedNodeClass:
    """What a NodeClass resolves to now: per zone one subnet, the security groups, and one AMI
    per (arch, variant) looked up (`image_for` picks the one an instance type boots).
    """

    nodeclass: EC2NodeClass
    subnets: Mapping[str, Subnet]
    security_groups: tuple[str, ...]
    images: Mapping[ImageKey, Image]

    @property
    def zones(self) -> frozenset[str]:
        """Zones the NodeClass can launch into."""
        return frozenset(self.subnets)

    def image_for(self, instance_type: InstanceType) -> Image | None:
        """The AMI a node of this type boots: its variant's, else one serving every variant; None
        when there is neither (the type cannot be launched with this NodeClass).
        """
        arch = instance_type.arch
        return self.images.get((arch, variant_of(instance_type))) or self.images.get((arch, ANY_VARIANT))


def variant_of(instance_type: InstanceType) -> str:
    """The AMI variant an instance type needs: neuron (AWS Inferentia/Trainium), nvidia (NVIDIA
    GPUs), standard (no accelerator), or, for other accelerators, their maker's name (no alias
    publishes an AMI for those: only images named by id, name or tags can launch them).

    Read from the catalog's labels, else from the device resources in the type's capacity.
    """
    capacity = instance_type.capacity
    accelerator = (instance_type.label(wk.INSTANCE_ACCELERATOR_MANUFACTURER) or "").lower()
    gpu = (instance_type.label(wk.INSTANCE_GPU_MANUFACTURER) or "").lower()
    if accelerator == "aws" or capacity[AWS_NEURON] > 0:
        return NEURON
    if gpu == NVIDIA or capacity[NVIDIA_GPU] > 0:
        return NVIDIA
    if gpu or accelerator:
        return gpu or accelerator
    if capacity[AMD_GPU] > 0:
        return "amd"
    if capacity[HABANA_GAUDI] > 0:
        return "habana"
    return STANDARD


# --- selector terms -> Describe filters (pure) -------------------------------------------------


def _tag_filters(tags: Mapping[str, str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for key, value in sorted(tags.items()):
        if value == "*":
            out.append({"Name": "tag-key", "Values": [key]})
        else:
            out.append({"Name": f"tag:{key}", "Values": [value]})
    return out


def subnet_filters(term: SelectorTerm) -> list[dict[str, Any]]:
    """DescribeSubnets filters for one subnetSelectorTerm."""
    filters = _tag_filters(term.tags)
    if term.id:
        filters.append({"Name": "subnet-id", "Values": [term.id]})
    if term.name:
        filters.append({"Name": "tag:Name", "Values": [term.name]})
    if term.owner_id:
        filters.append({"Name": "owner-id", "Values": [term.owner_id]})
    return filters


def security_group_filters(term: SelectorTerm) -> list[dict[str, Any]]:
    """DescribeSecurityGroups filters for one securityGroupSelectorTerm."""
    filters = _tag_filters(term.tags)
    if term.id:
        filters.append({"Name": "group-id", "Values": [term.id]})
    if term.name:
        filters.append({"Name": "group-name", "Values": [term.name]})
    if term.owner_id:
        filters.append({"Name": "owner-id", "Values": [term.owner_id]})
    return filters


def image_query(term: AMISelectorTerm) -> dict[str, Any]:
    """DescribeImages arguments for one id/name/owner/tags amiSelectorTerm."""
    filters = _tag_filters(term.tags)
    if term.id:
        filters.append({"Name": "image-id", "Values": [term.id]})
    if term.name:
        filters.append({"Name": "name", "Values": [term.name]})
    query: dict[str, Any] = {"Filters": filters}
    if term.owner:
        query["Owners"] = [term.owner]
    elif term.name and not term.id:
        # A name alone could match anyone's public image; Karpenter limits it to self and amazon.
        query["Owners"] = list(_DEFAULT_IMAGE_OWNERS)
    return query


def alias_parameters(alias: AMIAlias, k8s_version: str, variant: str = STANDARD) -> dict[str, str]:
    """Kubernetes arch -> the public SSM parameter holding the alias's AMI id for it and `variant`.

    Architectures for which the alias publishes no AMI of that variant are left out.
    """
    version = alias.version
    latest = version == "latest"
    prefix = f"/aws/service/eks/optimized-ami/{k8s_version}"
    out: dict[str, str] = {}
    if alias.family == "al2023":
        if variant not in (STANDARD, NVIDIA, NEURON):
            return out
        for kube_arch, arch in EC2_ARCH.items():
            leaf = "recommended" if latest else f"amazon-eks-node-al2023-{arch}-{variant}-{k8s_version}-{version}"
            out[kube_arch] = f"{prefix}/amazon-linux-2023/{arch}/{variant}/{leaf}/image_id"
    elif alias.family == "al2":
        if variant == STANDARD:
            amd = "recommended" if latest else f"amazon-eks-node-{k8s_version}-{version}"
            arm = "recommended" if latest else f"amazon-eks-arm64-node-{k8s_version}-{version}"
            out["amd64"] = f"{prefix}/amazon-linux-2/{amd}/image_id"
            out["arm64"] = f"{prefix}/amazon-linux-2-arm64/{arm}/image_id"
        elif variant in (NVIDIA, NEURON):  # one accelerated AMI (x86_64 only) for both
            gpu = "recommended" if latest else f"amazon-eks-gpu-node-{k8s_version}-{version}"
            out["amd64"] = f"{prefix}/amazon-linux-2-gpu/{gpu}/image_id"
    elif alias.family == "bottlerocket":
        # Bottlerocket releases are written v1.20.0 on GitHub but 1.20.0 in the SSM path.
        leaf = "latest" if latest else version.removeprefix("v")
        for kube_arch, arch in EC2_ARCH.items():
            if variant == STANDARD or (variant == NEURON and kube_arch == "amd64"):
                out[kube_arch] = f"/aws/service/bottlerocket/aws-k8s-{k8s_version}/{arch}/{leaf}/image_id"
            elif variant == NVIDIA:
                out[kube_arch] = f"/aws/service/bottlerocket/aws-k8s-{k8s_version}-nvidia/{arch}/{leaf}/image_id"
    elif alias.family.startswith("windows"):
        raise NodeClassNotResolved(f"alias {alias}: Windows nodes are not supported by Nodewright")
    return out


def choose_subnets(subnets: Iterable[Subnet]) -> dict[str, Subnet]:
    """Per zone, the subnet with the most free IPs (ties: lowest id); zones with none free are left out."""
    best: dict[str, Subnet] = {}
    for subnet in sorted(subnets, key=lambda s: (-s.available_ips, s.id)):
        if subnet.available_ips > 0 and subnet.zone not in best:
            best[subnet.zone] = subnet
    return dict(sorted(best.items()))


def choose_images(images: Iterable[Image]) -> dict[ImageKey, Image]:
    """Per (arch, variant), the newest image, preferring ones not deprecated (ties: highest id)."""
    best: dict[ImageKey, Image] = {}
    for image in sorted(images, key=lambda i: (i.deprecated, _neg(i.created), _neg(i.id))):
        best.setdefault(image.key, image)
    return dict(sorted(best.items()))


def _neg(text: str) -> tuple[int, ...]:
    # Sort key that orders strings descending inside an ascending sort.
    return tuple(-ord(c) for c in text)


def image_from_description(item: Mapping[str, Any], now: float) -> Image | None:
    """An Image from one DescribeImages entry, or None for an architecture nodes cannot run.

    It counts as deprecated when its DeprecationTime is at or before `now` (epoch seconds).
    """
    arch = KUBE_ARCH.get(str(item.get("Architecture", "")))
    if arch is None:
        return None
    deprecation = item.get("DeprecationTime")
    deprecated = False
    if deprecation:
        when = deprecation if isinstance(deprecation, datetime) else _parse_time(str(deprecation))
        deprecated = when is not None and when.timestamp() <= now
    return Image(
        id=str(item["ImageId"]),
        arch=arch,
        name=str(item.get("Name", "")),
        created=str(item.get("CreationDate", "")),
        deprecated=deprecated,
    )


def _parse_time(text: str) -> datetime | None:
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


# --- the resolver (I/O) ------------------------------------------------------------------------


@dataclass(slots=True)
class _Entry:
    value: Any
    expires: float


@dataclass(slots=True)
class _TTLCache:
    clock: Clock
    ttl: float
    entries: dict[Any, _Entry] = field(default_factory=dict)

    def get(self, key: Any, load: Callable[[], T]) -> T:
        now = self.clock.now()
        entry = self.entries.get(key)
        if entry is not None and now < entry.expires:
            value: T = entry.value
            return value
        value = load()
        self.entries[key] = _Entry(value, now + self.ttl)
        return value

    def clear(self) -> None:
        self.entries.clear()


class NodeClassResolver:
    """Resolves EC2NodeClasses for one cluster, caching each lookup for `ttl` seconds.

    Not thread-safe: one per Lambda container, like the clients it holds.
    """

    def __init__(
        self,
        ec2: Any,
        ssm: Any,
        cluster: ClusterInfo,
        *,
        clock: Clock,
        ttl: float = DEFAULT_TTL_SECONDS,
        backoff: Backoff | None = None,
    ) -> None:
        self._ec2 = ec2
        self._ssm = ssm
        self._cluster = cluster
        self._backoff = backoff or Backoff()
        self._clock = clock
        self._cache = _TTLCache(clock, ttl)

    def invalidate(self) -> None:
        """Forget every cached lookup (e.g. after a launch failed for a reason a lookup explains)."""
        self._cache.clear()

    def resolve(self, nodeclass: EC2NodeClass, variants: Iterable[str] = (STANDARD,)) -> ResolvedNodeClass:
        """Subnets per zone, security groups and AMIs per (arch, variant) for `variants`; raise
        NodeClassNotResolved if any of the three is empty.
        """
        subnets = self.subnets(nodeclass.subnet_selector_terms)
        if not subnets:
            raise NodeClassNotResolved(
                f"EC2NodeClass {nodeclass.name}: subnetSelectorTerms match no subnet with free addresses"
            )
        groups = self.security_groups(nodeclass.security_group_selector_terms)
        if not groups:
            raise NodeClassNotResolved(f"EC2NodeClass {nodeclass.name}: securityGroupSelectorTerms match no group")
        wanted = sorted(set(variants))
        images = self.images(nodeclass.ami_selector_terms, wanted)
        if not images:
            raise NodeClassNotResolved(
                f"EC2NodeClass {nodeclass.name}: amiSelectorTerms match no amd64 or arm64 AMI "
                f"for the {', '.join(wanted)} variant"
            )
        return ResolvedNodeClass(nodeclass, subnets, groups, images)

    def subnets(self, terms: Sequence[SelectorTerm]) -> dict[str, Subnet]:
        """Per zone, the matching subnet with the most free IPs."""
        key = ("subnets", _terms_key(terms))
        return self._cache.get(key, lambda: choose_subnets(self._describe_subnets(terms)))

    def security_groups(self, terms: Sequence[SelectorTerm]) -> tuple[str, ...]:
        """Ids of the matching security groups, sorted."""
        key = ("security-groups", _terms_key(terms))
        return self._cache.get(key, lambda: self._describe_security_groups(terms))

    def image_ids(self, nodeclasses: Mapping[str, EC2NodeClass]) -> dict[str, frozenset[str]]:
        """The AMI ids each EC2NodeClass resolves to now, by name, over the alias variants
        (standard, NVIDIA, Neuron): what standby instances booted from another are replaced by
        (`engine.standby.stale_reason`). A variant that does not resolve adds nothing; a NodeClass
        none of whose variants resolves is left out (unknown: never a reason to replace).
        """
        out: dict[str, frozenset[str]] = {}
        for name, nodeclass in sorted(nodeclasses.items()):
            found: set[str] = set()
            for variant in (STANDARD, NVIDIA, NEURON):
                try:
                    found.update(i.id for i in self.images(nodeclass.ami_selector_terms, (variant,)).values())
                except Exception as error:  # a variant the alias does not publish, or a lookup error
                    log.debug("images of EC2NodeClass %s, variant %s: %s", name, variant, error)
            if found:
                out[name] = frozenset(found)
        return out

    def images(self, terms: Sequence[AMISelectorTerm], variants: Iterable[str] = (STANDARD,)) -> dict[ImageKey, Image]:
        """(Kubernetes arch, variant) -> the AMI to launch for it, for each of `variants`.

        Terms without an alias give images of ANY_VARIANT whatever variants are asked for.
        """
        aliased = any(term.alias is not None for term in terms)
        out: dict[ImageKey, Image] = {}
        for variant in sorted(set(variants)) if aliased else [ANY_VARIANT]:
            key = ("images", self._cluster.version, _terms_key(terms), variant)
            out.update(self._cache.get(key, partial(self._choose_images, terms, variant)))
        return dict(sorted(out.items()))

    def _choose_images(self, terms: Sequence[AMISelectorTerm], variant: str) -> dict[ImageKey, Image]:
        return choose_images(self._find_images(terms, variant))

    def _describe_subnets(self, terms: Sequence[SelectorTerm]) -> list[Subnet]:
        found: dict[str, Subnet] = {}
        for term in terms:
            for item in self._paginate("describe_subnets", "Subnets", Filters=subnet_filters(term)):
                found[item["SubnetId"]] = Subnet(
                    id=item["SubnetId"],
                    zone=item["AvailabilityZone"],
                    available_ips=int(item.get("AvailableIpAddressCount", 0)),
                    zone_id=str(item.get("AvailabilityZoneId", "")),
                )
        return list(found.values())

    def _describe_security_groups(self, terms: Sequence[SelectorTerm]) -> tuple[str, ...]:
        found: set[str] = set()
        for term in terms:
            for item in self._paginate(
                "describe_security_groups", "SecurityGroups", Filters=security_group_filters(term)
            ):
                found.add(item["GroupId"])
        return tuple(sorted(found))

    def _find_images(self, terms: Sequence[AMISelectorTerm], variant: str) -> list[Image]:
        images: list[Image] = []
        for term in terms:
            if term.alias is not None:
                if variant != ANY_VARIANT:
                    images.extend(self._alias_images(term.alias, variant))
            elif term.ssm_parameter:
                image_id = self._parameter(term.ssm_parameter)
                if image_id:
                    images.extend(self._describe_images({"ImageIds": [image_id]}))
            else:
                images.extend(self._describe_images(image_query(term)))
        return images

    def _alias_images(self, alias: AMIAlias, variant: str) -> list[Image]:
        # The path already says the architecture and variant, so no DescribeImages call is needed.
        out: list[Image] = []
        for arch, name in alias_parameters(alias, self._cluster.version, variant).items():
            image_id = self._parameter(name)
            if image_id:
                out.append(Image(id=image_id, arch=arch, name=str(alias), variant=variant))
        return out

    def _parameter(self, name: str) -> str | None:
        try:
            response = self._backoff.call(lambda: self._ssm.get_parameter(Name=name))
        except Exception as error:
            if error_code(error) == "ParameterNotFound":
                return None
            raise
        return str(response["Parameter"]["Value"])

    def _describe_images(self, query: Mapping[str, Any]) -> list[Image]:
        out: list[Image] = []
        now = self._clock.now()
        for item in self._paginate("describe_images", "Images", **query):
            image = image_from_description(item, now)
            if image is not None:
                out.append(image)
        return out

    def _paginate(self, operation: str, key: str, **kwargs: Any) -> list[dict[str, Any]]:
        def pages() -> list[dict[str, Any]]:
            paginator = self._ec2.get_paginator(operation)
            return [item for page in paginator.paginate(**kwargs) for item in page.get(key, [])]

        return self._backoff.call(pages)


def _terms_key(terms: Sequence[Any]) -> str:
    # Selector terms hold dicts (unhashable); their repr is deterministic and says everything.
    return repr(tuple(terms))
