# Prometheus from Debian 12's own package (prometheus 2.42), for machines that reach a Debian
# mirror but no image registry. tests/compose_test.sh builds it on its debootstrapped base and
# swaps it for docker-compose.yml's prom/prometheus image (deploy/compose.test.yml); it takes the
# same command line. It needs no build context:
#
#     docker build --network host -t headerd-test/prometheus:bookworm - <deploy/prometheus.Dockerfile
#
# Build argument BASE_IMAGE: a Debian 12 image with apt sources (default debian:bookworm-slim).

ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
RUN apt-get update -q \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends prometheus \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /prometheus \
 && chown prometheus:prometheus /prometheus
USER prometheus
WORKDIR /prometheus
VOLUME /prometheus
EXPOSE 9090/tcp
ENTRYPOINT ["/usr/bin/prometheus"]
CMD ["--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus"]
