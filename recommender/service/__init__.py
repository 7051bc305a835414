"""The recommender as a cluster service: VPA statuses (and the forecast's schedule) kept current."""
