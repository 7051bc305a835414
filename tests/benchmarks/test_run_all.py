from benchmarks.run_all import goals_of


def test_goals_are_gathered_from_goal_objects_and_goal_keys_at_any_depth() -> None:
    results = {
        "bench_vpa": {"steps": [1, 2], "goals": {"no_step_slower_than_upstream": True}},
        "bench_backtest": {
            "cases": [
                {"cpu_seconds": 99.9, "goal_cpu_seconds": 60, "goal_met": False},
                {"cpu_seconds": 10.0},
            ]
        },
        "bench_startup": {"seconds": 0.4},
    }

    goals = goals_of(results)

    assert goals == {
        "bench_vpa.goals": {"no_step_slower_than_upstream": True},
        "bench_backtest.cases[0].goal_cpu_seconds": 60,
        "bench_backtest.cases[0].goal_met": False,
    }


def test_a_failed_benchmark_contributes_no_goals() -> None:
    assert goals_of({"bench_webhook": {"error": "exit code 1"}}) == {}
