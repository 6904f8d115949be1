"""`nodewright simulate`: the whole autoscaler on one machine, on a virtual clock.

scenario.py reads and validates scenario files; world.py runs one (the real Lambda handlers
against moto and the in-memory cluster, with kube-scheduler, kubelet, EC2 interruptions and
capacity errors emulated); lambdas.py runs invocations concurrently on the event loop; aws.py sets
up the moto account; kube.py holds the Kubernetes stand-ins; timewarp.py puts moto and the
handlers on the virtual clock; motofast.py makes moto give the same answers faster; metrics.py and
report.py measure and report; runner.py ties them together. moto and matplotlib are imported only
when a simulation runs.
"""
