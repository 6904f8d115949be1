"""AWS adapters: the only modules that import boto3 and botocore."""
