"""The alternatives Nodewright is measured against, as reference algorithms. Pure.

`karpenter/`: Karpenter v1.14's scheduler, launch choices, batching and disruption, re-implemented
from its source's behaviour (docs/karpenter-reference.md maps each rule to the file it follows).
`automode`: EKS Auto Mode, the same Karpenter run by AWS, plus its management fee, its node
lifetime and its defaults. Both take and return the engine's own values (`SchedulingInput`,
`SchedulingResult`, `DisruptionInput`, `DisruptionResult`), so the same shell, the simulator and
`nodewright plan --algorithm` can run either in Nodewright's place. Like the engine, nothing here
does I/O, reads the clock or the environment, or keeps module state.
"""
