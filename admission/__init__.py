"""kube-tailor admission: the mutating webhook that sizes pods when they are created.

Pure modules decide (`patch`, `review`, `admit`); `kube` (cluster reads) and
`server` (HTTPS) are the edges. `tailor admission` runs it.
"""
