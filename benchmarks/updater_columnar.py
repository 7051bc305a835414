"""An experiment, not the product: how fast a columnar updater pass could be.

Issue 46 part 5 asks for the pass's decisions over 10,000 pods on 500 nodes in under
1 CPU-s. This program times, in one process and in turn, the real pass
(`updater.follow.follow_once`) and a columnar pass written for the benchmark fleet's
case only (every pod plain, every resize fitting, no VPA, no boost, no pressure, dry
run), which does just the work the outcomes need: one walk of the listing (each pod's
workload, node and count), one plan per workload and template through the real planner
(`updater.plans.Plans`), the order by priority, the fit of every resize on its node by
cumulative sums in numpy, one patch per resize through the port, each answer counted
and checked against the plan, one Outcome per pod. Its outcomes are checked equal, in
order, to the real pass's before anything is timed. A third mode takes the plans from an
earlier pass: what the rest of a columnar pass costs, its floor. The figures bound what
rewriting the pass columnar could gain (docs/results/performance.md).

    python -m benchmarks.updater_columnar --rounds 5
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Hashable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.report import emit
from benchmarks.updater_fleet import NOW, Counted, Fleet, schedule_rows, synthetic_cluster
from tailor.api.meta import object_key
from tailor.cluster_port import UpdaterCluster
from tailor.workloads import pod_workload
from updater.collector import collector_paused
from updater.decide import Action
from updater.due_targets import Target, due_targets, live
from updater.fit import node_allocatable
from updater.follow import PassOptions, follow_once
from updater.pass_options import Outcome
from updater.plan import PodRules, ResizePlan
from updater.plans import Made, Plans
from updater.pod_counts import pod_count
from updater.report import RESIZED

Plan = Callable[[Any, Mapping[str, Target], str, str], Made]


def _fits(node_of: np.ndarray, now: np.ndarray, wanted: np.ndarray, room: np.ndarray) -> bool:
    """Does every resize fit, each counted after those before it on its node? `node_of`,
    `now` and `wanted` in the order of the resizes; `room` each node's allocatable less
    what its pods count now."""
    growth = wanted - now
    by_node = np.argsort(node_of, kind="stable")
    grouped = growth[by_node]
    before = np.cumsum(grouped, axis=0) - grouped  # the growth before each, all nodes
    starts = np.r_[0, np.flatnonzero(np.diff(node_of[by_node])) + 1]
    before -= np.repeat(before[starts], np.diff(np.r_[starts, len(by_node)]), axis=0)
    earlier = np.empty_like(before)
    earlier[by_node] = before
    free = room[node_of] + now - earlier
    return bool(np.all(wanted <= np.maximum(free, now)))


def _resize(made: Made) -> ResizePlan:
    if not isinstance(made.planned, ResizePlan) or not made.planned.changes:
        raise RuntimeError("a pod without a resize: the pod-by-pod path would decide it")
    return made.planned


def columnar_pass(port: UpdaterCluster, fleet: Fleet, plan: Plan) -> list[Outcome]:
    """The benchmark fleet's pass, columnar; raises where the real pass would decide
    otherwise than resize every pod (a resize without room, an answer not as planned)."""
    pods, nodes = port.pods(), port.nodes()
    port.limit_ranges()
    wanted_by: dict[tuple[str, str], dict[str, Target]] = {}
    for (namespace, workload, container), target in due_targets(schedule_rows(fleet), NOW).items():
        wanted_by.setdefault((namespace, workload), {})[container] = target
    with collector_paused():
        node_index = {name: index for index, name in enumerate(nodes)}
        node_of, now, counts, due = [], [], [], []
        for index, pod in enumerate(pods):
            counts.append(count := pod_count(pod))
            node_of.append(node_index[pod["spec"]["nodeName"]])
            now.append(count.now)
            namespace, workload = object_key(pod)[0], pod_workload(pod)
            targets = wanted_by.get((namespace, workload))
            if targets and live(pod):
                due.append((index, namespace, workload, plan(pod, targets, namespace, workload)))
        nodes_of, now_of = np.array(node_of), np.array(now, dtype=np.int64)
        totals = np.zeros((len(nodes), 2), np.int64)
        np.add.at(totals, nodes_of, now_of)
        allocatable = np.array([tuple(node_allocatable(n)) for n in nodes.values()], np.int64)
        order = sorted(due, key=lambda item: item[3].rank or (2, 0.0))
        picked = np.array([item[0] for item in order])
        resizes = [_resize(item[3]) for item in order]
        wanted = np.array(
            [tuple(counts[i].effective(r)) for i, r in zip(picked, resizes, strict=True)],
            np.int64,
        )
        if not _fits(nodes_of[picked], now_of[picked], wanted, allocatable - totals):
            raise RuntimeError("a resize without room: the pod-by-pod path would decide it")
        outcomes = []
        for (index, namespace, workload, _), resize, amounts in zip(
            order, resizes, wanted, strict=True
        ):
            pod = pods[index]
            answer = port.resize(pod, resize.patch(), True)
            if answer.obj is None or tuple(pod_count(answer.obj).now) != tuple(amounts):
                raise RuntimeError("an answer not as planned: the pod-by-pod path would recount")
            name = object_key(pod)[1]
            detail = resize.describe()
            outcomes.append(
                Outcome(namespace, name, workload, Action.RESIZE, detail, True, RESIZED)
            )
    return outcomes


def planner(memo: dict[Hashable, Made] | None) -> Plan:
    """Plans through the real planner; with `memo`, each workload's plan kept across
    passes (the plans free: the floor of the rest)."""
    plans, rules = Plans(), PodRules()

    def plan(pod: Any, targets: Mapping[str, Target], namespace: str, workload: str) -> Made:
        if memo is None:
            return plans.plan(pod, targets, rules)
        found = memo.get((namespace, workload))
        if found is None:
            found = memo[(namespace, workload)] = plans.plan(pod, targets, rules)
        return found

    return plan


def _timed(fleet: Fleet, mode: str, memo: dict[Hashable, Made]) -> tuple[float, list[Outcome]]:
    """CPU seconds of one pass less the port's, and its outcomes."""
    port = Counted(synthetic_cluster(fleet))
    start = time.process_time()
    if mode == "pass":
        rows = schedule_rows(fleet)
        outcomes = list(follow_once(port.port(), rows, NOW, PassOptions(dry_run=True)))
    else:
        kept = memo if mode == "columnar_plans_free" else None
        outcomes = columnar_pass(port.port(), fleet, planner(kept))
    return time.process_time() - start - port.cpu_seconds, outcomes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    fleet, memo = Fleet(pods=args.pods, nodes=args.nodes), dict[Hashable, Made]()
    modes = ("pass", "columnar", "columnar_plans_free")
    seen = {mode: _timed(fleet, mode, memo)[1] for mode in modes}  # the memo filled too
    same = all(seen[mode] == seen["pass"] for mode in modes)
    if not same:
        raise SystemExit("the columnar pass decided otherwise than the pass")
    seconds: dict[str, list[float]] = {mode: [] for mode in modes}
    for _ in range(args.rounds):
        for mode in modes:
            seconds[mode].append(round(_timed(fleet, mode, memo)[0], 3))
    medians = {mode: statistics.median(found) for mode, found in seconds.items()}
    result = {
        "benchmark": "updater_columnar",
        "pods": args.pods,
        "nodes": args.nodes,
        "outcomes_equal": same,
        "decisions_cpu_s": seconds,
        "median_cpu_s": medians,
        "columnar_over_pass": round(medians["columnar"] / medians["pass"], 2),
    }
    emit(result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
