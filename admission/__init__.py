"""kube-tailor: admission."""
