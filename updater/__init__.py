"""kube-tailor: updater."""
