"""Whether a download host can be reached, asked before a download so that an offline machine fails at once."""

import socket


def host_reachable(address, timeout=3.0):
    """Returns whether a TCP connection to `address` (host, port) opens within `timeout` seconds."""
    try:
        socket.create_connection(address, timeout=timeout).close()
        return True
    except OSError:
        return False
