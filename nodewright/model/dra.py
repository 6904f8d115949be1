"""Dynamic Resource Allocation (`resource.k8s.io/v1`): claims, templates, device classes, and the
devices an instance type publishes. Pure.

Role: the scheduling view of DRA. A pod names claims in `spec.resourceClaims[]` (a
`resourceClaimName`, shared, or a `resourceClaimTemplateName`, from which the control plane makes
one claim per pod and records its name in `status.resourceClaimStatuses`). A claim's
`spec.devices.requests[].exactly` asks for `count` devices (or `allocationMode: All`) of a
`deviceClassName`, filtered by CEL selectors; the class adds selectors of its own. A node's DRA
driver publishes its devices (ResourceSlices); before a node exists, `published_devices` says
what the drivers would publish on it, from the instance type's well-known GPU / accelerator
labels (the same labels a node carries), named as the drivers name them:

* NVIDIA's DRA driver (`gpu.nvidia.com`, github.com/NVIDIA/k8s-dra-driver-gpu): one device per
  GPU, attributes `type` ("gpu"), `productName` ("NVIDIA " + EC2's GPU name upper-cased: "NVIDIA
  L40S"; nvidia-smi's own string is sometimes longer, "NVIDIA A100-SXM4-40GB", so selectors
  written for real nodes are best as `productName.contains("A100")`),
  `brand` ("Nvidia"), `architecture` ("Ada Lovelace"; from the table below), `index`; capacity
  `memory` (EC2's per-GPU memory, MiB).
* The AWS Neuron DRA driver (`neuron.aws.com`, Trainium and Inferentia2 only; the driver does not
  cover first-generation Inferentia): one device per Neuron device, attributes `instanceType`,
  `productName` (EC2's accelerator name: "Trainium"), `deviceId`.

Devices on one instance type are identical, so "does a type satisfy a claim" is "do its devices
pass every selector of each request, and are there enough of them"; which of them a claim gets
(`matchAttribute` constraints, device ids) does not change where the pod can go, so it is left to
the drivers, as kube-scheduler's allocator leaves the choice of identical devices.

Not evaluated: `firstAvailable` (prioritized alternatives), `capacity.requests` (consumable
capacity) and device taints; a claim using them is reported as unsupported (the pod is left out
with that reason), never silently matched. `adminAccess` requests ask for no exclusive device and
are counted as none.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from nodewright.model import labels as wk
from nodewright.model.cel import CelError, Device, Quantity, Selector, UnsupportedExpression
from nodewright.model.errors import InvalidValue
from nodewright.model.quantity import parse_quantity
from nodewright.model.requirements import Requirements
from nodewright.model.resources import AWS_NEURON, NVIDIA_GPU

API_VERSION = "resource.k8s.io/v1"
NVIDIA_DRIVER = "gpu.nvidia.com"
NEURON_DRIVER = "neuron.aws.com"

# The resource each driver's devices are counted as: the device plugin's extended resource, so a
# GPU is one GPU whichever API asks for it (a node runs one of the two per device kind).
DRIVER_RESOURCE = MappingProxyType({NVIDIA_DRIVER: NVIDIA_GPU, NEURON_DRIVER: AWS_NEURON})

# EC2 GPU name (lower case, as the catalog labels it) -> NVIDIA architecture name, as
# nvidia-smi and the DRA driver's `architecture` attribute give it.
_ARCHITECTURE = MappingProxyType(
    {
        "k80": "Kepler",
        "m60": "Maxwell",
        "v100": "Volta",
        "t4": "Turing",
        "t4g": "Turing",
        "a10g": "Ampere",
        "a100": "Ampere",
        "l4": "Ada Lovelace",
        "l40s": "Ada Lovelace",
        "h100": "Hopper",
        "h200": "Hopper",
        "b200": "Blackwell",
        "b300": "Blackwell",
        "rtx pro 4500": "Blackwell",
        "rtx pro server 6000": "Blackwell",
    }
)
_NEURON_PRODUCTS = ("trainium", "trainium2", "trainium3", "inferentia2")
_MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class PublishedDevices:
    """`count` identical devices of one driver on one node (or instance type)."""

    driver: str
    device: Device
    count: int

    @property
    def resource(self) -> str:
        """The resource name these devices are counted as."""
        return DRIVER_RESOURCE[self.driver]


def published_devices(labels: Mapping[str, str | None]) -> tuple[PublishedDevices, ...]:
    """The devices the NVIDIA and Neuron DRA drivers would publish on a node with these labels
    (an instance type's fixed labels, or a Node's), as the module docstring describes.
    """
    out: list[PublishedDevices] = []
    gpus = _int(labels.get(wk.INSTANCE_GPU_COUNT))
    if gpus > 0 and (labels.get(wk.INSTANCE_GPU_MANUFACTURER) or "").lower() == "nvidia":
        name = labels.get(wk.INSTANCE_GPU_NAME) or ""
        memory = _int(labels.get(wk.INSTANCE_GPU_MEMORY))
        product = f"NVIDIA {name.upper()}"
        attributes: dict[str, object] = {
            "type": "gpu",
            "productName": product,
            "brand": "Nvidia",
            "architecture": _ARCHITECTURE.get(name.lower(), ""),
            "index": 0,
        }
        capacity = {"memory": Quantity(parse_quantity(memory * _MIB))} if memory else {}
        out.append(
            PublishedDevices(
                NVIDIA_DRIVER, Device(NVIDIA_DRIVER, {NVIDIA_DRIVER: attributes}, {NVIDIA_DRIVER: capacity}), gpus
            )
        )
    chips = _int(labels.get(wk.INSTANCE_ACCELERATOR_COUNT))
    accelerator = (labels.get(wk.INSTANCE_ACCELERATOR_NAME) or "").lower()
    if chips > 0 and accelerator in _NEURON_PRODUCTS:
        attributes = {
            "instanceType": labels.get(wk.INSTANCE_TYPE) or "",
            "productName": accelerator.title(),
            "deviceId": 0,
        }
        out.append(PublishedDevices(NEURON_DRIVER, Device(NEURON_DRIVER, {NEURON_DRIVER: attributes}, {}), chips))
    return tuple(out)


def _int(value: str | None) -> int:
    try:
        return int(value or 0)
    except ValueError:
        return 0


# -- the API objects -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    """One `spec.devices.requests[]` entry with its `exactly` part: `count` devices of
    `device_class` passing `selectors` (or all matching devices of the node, `all_devices`).
    `unsupported` names a feature this model does not evaluate (see the module docstring).
    """

    name: str
    device_class: str
    selectors: tuple[Selector, ...] = ()
    count: int = 1
    all_devices: bool = False
    admin_access: bool = False
    unsupported: str = ""


@dataclass(frozen=True, slots=True)
class DeviceClass:
    """A cluster-scoped DeviceClass: the selectors every request for it adds."""

    name: str
    selectors: tuple[Selector, ...] = ()

    @classmethod
    def parse(cls, manifest: Mapping[str, Any]) -> DeviceClass:
        """From a DeviceClass manifest; InvalidValue names the class and the field."""
        name = _name(manifest, "DeviceClass")
        spec = manifest.get("spec") or {}
        return cls(name, _selectors(spec.get("selectors"), f"DeviceClass {name}: spec.selectors"))


@dataclass(frozen=True, slots=True)
class ResourceClaim:
    """A namespaced ResourceClaim: its requests and, once allocated, the node it is bound to
    (`allocated_terms`, from `status.allocation.nodeSelector`; () while unallocated).
    """

    namespace: str
    name: str
    requests: tuple[DeviceRequest, ...]
    allocated_terms: tuple[Requirements, ...] = ()
    reserved_for: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """`namespace/name`."""
        return f"{self.namespace}/{self.name}"

    @classmethod
    def parse(cls, manifest: Mapping[str, Any]) -> ResourceClaim:
        """From a ResourceClaim manifest; InvalidValue names the claim and the field."""
        name = _name(manifest, "ResourceClaim")
        meta = manifest.get("metadata") or {}
        where = f"ResourceClaim {meta.get('namespace') or 'default'}/{name}"
        allocation = (manifest.get("status") or {}).get("allocation") or {}
        terms = ((allocation.get("nodeSelector") or {}).get("nodeSelectorTerms")) or ()
        try:
            allocated = tuple(_term(t) for t in terms)
        except InvalidValue as error:
            raise InvalidValue(f"{where}: status.allocation.nodeSelector: {error}") from None
        reserved = tuple(str(r.get("name") or "") for r in (manifest.get("status") or {}).get("reservedFor") or () if r)
        return cls(
            namespace=str(meta.get("namespace") or "default"),
            name=name,
            requests=_requests(manifest.get("spec"), f"{where}: spec"),
            allocated_terms=allocated,
            reserved_for=reserved,
        )


@dataclass(frozen=True, slots=True)
class ResourceClaimTemplate:
    """A namespaced ResourceClaimTemplate: the requests of the claim made for each pod."""

    namespace: str
    name: str
    requests: tuple[DeviceRequest, ...]

    @property
    def key(self) -> str:
        """`namespace/name`."""
        return f"{self.namespace}/{self.name}"

    @classmethod
    def parse(cls, manifest: Mapping[str, Any]) -> ResourceClaimTemplate:
        """From a ResourceClaimTemplate manifest; InvalidValue names the template and the field."""
        name = _name(manifest, "ResourceClaimTemplate")
        meta = manifest.get("metadata") or {}
        where = f"ResourceClaimTemplate {meta.get('namespace') or 'default'}/{name}"
        spec = (manifest.get("spec") or {}).get("spec")
        return cls(str(meta.get("namespace") or "default"), name, _requests(spec, f"{where}: spec.spec"))


@dataclass(frozen=True, slots=True)
class PodClaim:
    """One `spec.resourceClaims[]` entry of a pod: a shared claim by name, or a template; for a
    template, `generated` is the claim the control plane made (from `status.resourceClaimStatuses`).
    """

    name: str
    claim_name: str = ""
    template_name: str = ""
    generated: str = ""

    @classmethod
    def of(cls, spec: Mapping[str, Any], status: Mapping[str, Any]) -> tuple[PodClaim, ...]:
        """A pod's claims, from its spec and status."""
        entries = spec.get("resourceClaims") or ()
        if not entries:
            return ()
        made = {
            str(s.get("name")): str(s.get("resourceClaimName") or "") for s in status.get("resourceClaimStatuses") or ()
        }
        out = []
        for index, entry in enumerate(entries):
            name = str(entry.get("name") or "")
            claim = str(entry.get("resourceClaimName") or "")
            template = str(entry.get("resourceClaimTemplateName") or "")
            if not name or bool(claim) == bool(template):
                raise InvalidValue(
                    f"spec.resourceClaims[{index}]: needs a name and exactly one of resourceClaimName, "
                    "resourceClaimTemplateName"
                )
            out.append(cls(name, claim, template, made.get(name, "")))
        return tuple(out)


@dataclass(frozen=True, slots=True)
class DeviceObjects:
    """The cluster's DRA objects, keyed as pods name them (claims and templates `namespace/name`)."""

    classes: Mapping[str, DeviceClass] = field(default_factory=dict)
    claims: Mapping[str, ResourceClaim] = field(default_factory=dict)
    templates: Mapping[str, ResourceClaimTemplate] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.classes or self.claims or self.templates)

    @classmethod
    def parse(
        cls,
        classes: Iterable[Mapping[str, Any]] = (),
        claims: Iterable[Mapping[str, Any]] = (),
        templates: Iterable[Mapping[str, Any]] = (),
    ) -> DeviceObjects:
        """From the three kinds' manifests; InvalidValue names the object and field at fault."""
        parsed_classes = (DeviceClass.parse(m) for m in classes)
        parsed_claims = (ResourceClaim.parse(m) for m in claims)
        parsed_templates = (ResourceClaimTemplate.parse(m) for m in templates)
        return cls(
            {c.name: c for c in parsed_classes},
            {c.key: c for c in parsed_claims},
            {t.key: t for t in parsed_templates},
        )


KINDS = ("DeviceClass", "ResourceClaim", "ResourceClaimTemplate")


def _name(manifest: Mapping[str, Any], kind: str) -> str:
    name = str((manifest.get("metadata") or {}).get("name") or "")
    if not name:
        raise InvalidValue(f"{kind}: metadata.name is required")
    return name


def _term(term: Mapping[str, Any]) -> Requirements:
    expressions = list(term.get("matchExpressions") or ())
    for f in term.get("matchFields") or ():  # metadata.name: the node's own name
        if f.get("key") == "metadata.name":
            expressions.append({**f, "key": wk.HOSTNAME})
    return Requirements.parse(expressions)


def _selectors(items: Any, where: str) -> tuple[Selector, ...]:
    out = []
    for index, item in enumerate(items or ()):
        expression = ((item or {}).get("cel") or {}).get("expression")
        if not isinstance(expression, str):
            raise InvalidValue(f"{where}[{index}]: needs cel.expression")
        try:
            out.append(Selector.parse(expression))
        except UnsupportedExpression as error:
            raise InvalidValue(f"{where}[{index}].cel.expression: {error}") from None
    return tuple(out)


def _requests(spec: Any, where: str) -> tuple[DeviceRequest, ...]:
    requests = ((spec or {}).get("devices") or {}).get("requests") or ()
    out = []
    for index, request in enumerate(requests):
        here = f"{where}.devices.requests[{index}]"
        name = str(request.get("name") or "")
        if not name:
            raise InvalidValue(f"{here}: name is required")
        if request.get("firstAvailable"):
            out.append(DeviceRequest(name, "", unsupported="firstAvailable (prioritized alternatives)"))
            continue
        exactly = request.get("exactly")
        if not isinstance(exactly, Mapping):
            raise InvalidValue(f"{here}: needs exactly (or firstAvailable)")
        device_class = str(exactly.get("deviceClassName") or "")
        if not device_class:
            raise InvalidValue(f"{here}.exactly: deviceClassName is required")
        mode = str(exactly.get("allocationMode") or "ExactCount")
        if mode not in ("ExactCount", "All"):
            raise InvalidValue(f"{here}.exactly.allocationMode: {mode!r} is neither ExactCount nor All")
        count = exactly.get("count", 1)
        if mode == "ExactCount" and (not isinstance(count, int) or isinstance(count, bool) or count < 1):
            raise InvalidValue(f"{here}.exactly.count: {count!r} is not a positive integer")
        out.append(
            DeviceRequest(
                name=name,
                device_class=device_class,
                selectors=_selectors(exactly.get("selectors"), f"{here}.exactly.selectors"),
                count=int(count) if mode == "ExactCount" else 0,
                all_devices=mode == "All",
                admin_access=bool(exactly.get("adminAccess")),
                unsupported="capacity.requests (consumable capacity)" if exactly.get("capacity") else "",
            )
        )
    return tuple(out)


# -- matching ------------------------------------------------------------------------------------


def matching(request: DeviceRequest, device_class: DeviceClass, published: Sequence[PublishedDevices]) -> int:
    """How many of `published` pass the class's and the request's selectors (0 when none).
    Raises CelError when a selector errs on a device (Kubernetes aborts the allocation then).
    """
    total = 0
    for group in published:
        if all(s.matches(group.device) for s in (*device_class.selectors, *request.selectors)):
            total += group.count
    return total


__all__ = [
    "API_VERSION",
    "KINDS",
    "NEURON_DRIVER",
    "NVIDIA_DRIVER",
    "CelError",
    "DeviceClass",
    "DeviceObjects",
    "DeviceRequest",
    "PodClaim",
    "PublishedDevices",
    "ResourceClaim",
    "ResourceClaimTemplate",
    "matching",
    "published_devices",
]
