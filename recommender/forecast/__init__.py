"""The forecasting recommender: shape-aware forecasts, conformal margins, schedules."""
