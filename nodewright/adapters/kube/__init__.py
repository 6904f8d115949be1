"""Kubernetes adapters: the only modules that import the kubernetes client."""
