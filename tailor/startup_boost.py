"""The record of a CPU startup boost on a pod: written by the webhook, read by the updater.

Upstream's AEP-7862 boosts CPU at a pod's creation and resizes it back once the pod
has been Ready for a while. Our webhook writes, in the pod's annotation
`kube-tailor.io/startup-cpu-boost`, each boosted container's CPU during and after the
boost and how long it stays once Ready; the updater needs nothing else to end it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from tailor.quantity import Quantity, QuantityError

BOOST_ANNOTATION = "kube-tailor.io/startup-cpu-boost"


@dataclass(frozen=True)
class BoostedCpu:
    """One container's CPU request and limit during and after the boost (no limit: None)."""

    request: Quantity
    limit: Quantity | None
    base_request: Quantity
    base_limit: Quantity | None


@dataclass(frozen=True)
class BoostRecord:
    hold_seconds: float
    containers: dict[str, BoostedCpu]

    def to_annotation(self) -> str:
        def text(amount: Quantity | None) -> str | None:
            return amount.canonical() if amount is not None else None

        containers = {
            name: {
                "request": text(cpu.request),
                "limit": text(cpu.limit),
                "baseRequest": text(cpu.base_request),
                "baseLimit": text(cpu.base_limit),
            }
            for name, cpu in sorted(self.containers.items())
        }
        return json.dumps(
            {"holdSeconds": self.hold_seconds, "containers": containers}, sort_keys=True
        )

    @classmethod
    def from_annotations(cls, annotations: object) -> BoostRecord | None:
        """The record in a pod's annotations; None when there is none or it cannot be read
        (a hand-edited or foreign one is left to the normal rules)."""
        text = annotations.get(BOOST_ANNOTATION) if isinstance(annotations, dict) else None
        if not isinstance(text, str):
            return None
        try:
            record = json.loads(text)

            def amount(value: object) -> Quantity | None:
                return None if value is None else Quantity.parse(str(value))

            containers = {
                str(name): BoostedCpu(
                    Quantity.parse(str(cpu["request"])),
                    amount(cpu.get("limit")),
                    Quantity.parse(str(cpu["baseRequest"])),
                    amount(cpu.get("baseLimit")),
                )
                for name, cpu in record["containers"].items()
            }
            hold = float(record.get("holdSeconds") or 0)
        except (ValueError, KeyError, TypeError, AttributeError, QuantityError):
            return None
        if not hold >= 0 or hold == float("inf"):
            return None
        return cls(hold, containers)
