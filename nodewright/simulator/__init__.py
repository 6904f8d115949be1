"""`nodewright simulate`: the whole autoscaler on one machine, on a virtual clock.

`scenario/` reads, validates and generates scenario files; `world/` runs one (the real Lambda
handlers against moto and the in-memory cluster, with kube-scheduler, kubelet, EC2 interruptions
and capacity errors emulated) on the stand-ins of `standins/` (the moto account and EC2, the
Kubernetes stand-ins, the Lambda runtime on the event loop, moto put on the virtual clock and made
faster, the faults); `report/` measures and reports; `runner.py` ties them together and `serve.py`
serves a run to kubectl (docs/design/simulator.md maps each package). moto and matplotlib are imported only
when a simulation runs.
"""
