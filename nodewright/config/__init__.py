"""Configuration documents: Karpenter v1 NodePool and EC2NodeClass YAML parsed and validated into the model. Pure."""
