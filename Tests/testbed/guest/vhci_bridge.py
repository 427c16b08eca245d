"""Makes a virtual-radio controller a kernel controller: /dev/vhci <-> H4 over TCP.

A process holding /dev/vhci is a controller to the kernel (hci_vhci.ko): it registers hciN and
sends it HCI commands. This bridge relays them, packet for packet, to one vradio.py controller
(tcp) and writes that controller's packets back, one write() per packet as vhci wants them.
Closing /dev/vhci (SIGTERM, or the vradio side going away) unregisters hciN: an unplug.
Prints one JSON line {"ready": true, "index": N} once the kernel has created the device.
"""
import json
import os
import select
import signal
import socket
import sys

HCI_VENDOR_PKT = 0xFF
HCI_PRIMARY = 0x00


def frame_length(buf: bytes) -> int | None:
    """Length of the first whole H4 packet in buf, or None if incomplete."""
    if not buf:
        return None
    t = buf[0]
    if t == 0x04:  # event: code, length(1)
        return 3 + buf[2] if len(buf) >= 3 else None
    if t == 0x02:  # ACL: handle(2), length(2)
        return 5 + int.from_bytes(buf[3:5], "little") if len(buf) >= 5 else None
    if t == 0x03:  # SCO: handle(2), length(1)
        return 4 + buf[3] if len(buf) >= 4 else None
    if t == 0x05:  # ISO: handle(2), length(2, 14 bits)
        return 5 + (int.from_bytes(buf[3:5], "little") & 0x3FFF) if len(buf) >= 5 else None
    raise ValueError(f"not an H4 packet type: {t:#x}")


def main() -> int:
    host, port = sys.argv[1].rsplit(":", 1)
    sock = socket.create_connection((host, int(port)))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    vhci = os.open("/dev/vhci", os.O_RDWR)
    # Ask for a primary controller now (else the kernel waits a second and picks it itself).
    os.write(vhci, bytes([HCI_VENDOR_PKT, HCI_PRIMARY]))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    pending = b""
    announced = False
    try:
        while True:
            ready, _, _ = select.select([vhci, sock], [], [])
            if vhci in ready:
                pkt = os.read(vhci, 4096)
                if not pkt:
                    return 0
                if pkt[0] == HCI_VENDOR_PKT:
                    # The kernel's answer to the vendor packet: [0xff, opcode, index LE16].
                    if not announced and len(pkt) >= 4:
                        print(json.dumps({"ready": True, "index": int.from_bytes(pkt[2:4], "little")}), flush=True)
                        announced = True
                    continue
                sock.sendall(pkt)
            if sock in ready:
                data = sock.recv(65536)
                if not data:
                    return 0
                pending += data
                while (n := frame_length(pending)) is not None and len(pending) >= n:
                    os.write(vhci, pending[:n])
                    pending = pending[n:]
    finally:
        os.close(vhci)
        sock.close()


if __name__ == "__main__":
    sys.exit(main())
