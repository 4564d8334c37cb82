"""The names of the lab's hosts and of the network without emulation: plain constants, apart
from the pydantic models of ``spec.network`` so that ``lab`` code that only needs the names
(``doctor``'s checks among it) does not load pydantic."""

LOOPBACK = "loopback"  # the network profile that emulates nothing: every process on the host
HOSTS = ("emitter", "broker", "receiver")  # the hosts of an emulated network, in order
