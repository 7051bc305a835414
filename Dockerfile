# The one image of kube-tailor's three services (`tailor recommender`, `tailor follow`,
# `tailor admission`); deploy/*/deployment.yaml pick the command.
#   docker build -t ghcr.io/kube-tailor/kube-tailor:0.1.0 .
# Only the four packages and the project files are copied: tests, notebooks and the
# benchmark data never reach the image (tests/deploy checks this list installs).
FROM python:3.11-slim
WORKDIR /build
COPY pyproject.toml README.md ./
COPY tailor/ tailor/
COPY recommender/ recommender/
COPY updater/ updater/
COPY admission/ admission/
RUN pip install --no-cache-dir . && rm -rf /build
WORKDIR /
# the forecaster's compiled kernels cache their machine code here (the pods mount /tmp)
ENV NUMBA_CACHE_DIR=/tmp/numba-cache
# numeric, so the kubelet can check runAsNonRoot (PodSecurity "restricted")
USER 65532:65532
ENTRYPOINT ["tailor"]
