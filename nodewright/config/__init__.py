"""Configuration documents: Karpenter v1 NodePool and EC2NodeClass YAML parsed and validated into the model. Pure.

Entry points: `parse_yaml` / `parse_manifest` (text or objects from any source, YAML or JSON,
`kind: List` included), `combine` (several sources as one configuration), `files.read_paths`
(the one I/O function). Each returns a `Loaded` with every valid `Document`, every `Problem` and
every warning (unknown or ignored fields); `Loaded.require()` raises `ConfigError` unless there
are no problems, and `Loaded.strict()` counts warnings as problems.
"""

from nodewright.config.documents import Document, Loaded, combine, dump_yaml, parse_manifest
from nodewright.config.problems import ConfigError, Problem
from nodewright.config.stream import parse_yaml

__all__ = ["ConfigError", "Document", "Loaded", "Problem", "combine", "dump_yaml", "parse_manifest", "parse_yaml"]
