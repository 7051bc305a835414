"""kube-tailor: tailor."""
