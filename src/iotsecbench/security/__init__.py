"""Security configurations: TLS profiles, payload schemes, key establishment, properties.

Never touches the network.
"""
