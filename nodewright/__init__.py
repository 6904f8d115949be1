"""Nodewright: a serverless node autoscaler for Amazon EKS."""
