"""kube-tailor: recommender."""
