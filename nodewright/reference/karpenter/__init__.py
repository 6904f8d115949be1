"""Karpenter v1.14 as a reference algorithm: scheduler, launch, batching, disruption. Pure.

Files: `pods.py` (a pod's relaxation levels), `pools.py` (a NodePool's instance types as
vectors), `topology.py` (bins and topology counts), `scheduler.py` (the pod-by-pod pass,
`schedule`), `launch.py` (what a claim sends to CreateFleet, and batching), `simulation.py`
(where candidates' pods would go, with this scheduler), `disruption.py` (the disruption methods,
`compute_commands` and `validate`).
"""
