# Sourced by scripts/setup.sh and scripts/services.sh (not executed).
# The Apache Kafka broker the integration tests run against; see
# docs/development.md ("Kafka version") for why this line and not another.
CLINK_KAFKA_VERSION=${CLINK_KAFKA_VERSION:-4.1.2}
