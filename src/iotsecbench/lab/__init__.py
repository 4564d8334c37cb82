"""The testbed: mosquitto broker process, PKI, (later) network namespaces and CPU constraints."""
