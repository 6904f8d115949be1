"""The stand-ins the functions meet in a simulation, each at the edge the production code talks to.

AWS: the simulated account (`account.py`: moto set up as the stack would leave it), its EC2
(`ec2.py`, with CreateFleet's choice in `fleet.py` and capacity reservations in
`reservations.py`), the mirrored reads of the EC2 provider and the state store (`mirrors.py`),
moto made faster and put on the virtual clock (`motofast.py`, `timewarp.py`) and the catalog the
controllers read (`catalog.py`). Kubernetes: the in-memory cluster with kube-scheduler, kubelets
and controllers (`kube.py`), or the real adapter over HTTP (`kubehttp.py`). Lambda: the event loop
and concurrent invocations on the virtual clock (`lambdas.py`). The configuration the functions
read as the scenario changes it (`configuration.py`), and the scenario's faults (`faults.py`).
"""
