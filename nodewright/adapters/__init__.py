"""Adapters: the only code that talks to AWS (`aws/`, boto3) and Kubernetes (`kube/`, the client)."""
