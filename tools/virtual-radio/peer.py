#!/usr/bin/env python3
"""Independent GAEN peers for gaend's end-to-end tests: a real Bumble host (not gaend code)
on a virtual controller.

  peer.py scan --transport tcp-client:127.0.0.1:PORT --duration S [--extended] [--active]
      one JSON line per advertising report: time, address, address_type, pdu, rssi, data.
  peer.py advertise-gaen --transport ... --tek HEX --tx-power DBM [--metadata HEX]
                         [--interval-ms MS] [--enin N] [--time-scale N] [--duration S]
      GAEN beacons (ADV_NONCONN_IND, non-resolvable private address, the 31-byte payload)
      for the TEK at the current ENIN; one JSON line per rotation (the peer rotates
      address, RPI and AEM together at each interval boundary of its clock).

The GAEN crypto follows the Exposure Notification Cryptography Specification v1.2 (digest in
shared/docs/GAEN-FACTS.md) and uses the `cryptography` package, so that the RPIs gaend derives
are checked against an implementation that shares no code with it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import struct
import sys
import time

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

ENIN_SECONDS = 600
GAEN_UUID16 = bytes([0x6F, 0xFD])  # 0xFD6F, little-endian
LEGACY_PDU_NAMES = {0: "ADV_IND", 1: "ADV_DIRECT_IND", 2: "ADV_SCAN_IND",
                    3: "ADV_NONCONN_IND", 4: "SCAN_RSP"}
# Extended report event_type (bits 0-4) of legacy PDUs (Core spec Vol 4, Part E, 7.7.65.13).
EXT_LEGACY_PDU_NAMES = {0b10011: "ADV_IND", 0b10101: "ADV_DIRECT_IND", 0b10010: "ADV_SCAN_IND",
                        0b10000: "ADV_NONCONN_IND", 0b11011: "SCAN_RSP", 0b11010: "SCAN_RSP"}


# -----------------------------------------------------------------------------
# GAEN crypto (spec v1.2)
# -----------------------------------------------------------------------------
def _hkdf16(tek: bytes, info: bytes) -> bytes:
    # salt=None is RFC 5869's zero-filled salt, as the spec requires.
    return HKDF(algorithm=hashes.SHA256(), length=16, salt=None, info=info).derive(tek)


def rpik(tek: bytes) -> bytes:
    _check_len("TEK", tek, 16)
    return _hkdf16(tek, b"EN-RPIK")


def aemk(tek: bytes) -> bytes:
    _check_len("TEK", tek, 16)
    return _hkdf16(tek, b"EN-AEMK")


def rpi(rpi_key: bytes, enin: int) -> bytes:
    padded = b"EN-RPI" + bytes(6) + struct.pack("<I", enin)
    encryptor = Cipher(algorithms.AES(rpi_key), modes.ECB()).encryptor()
    return encryptor.update(padded) + encryptor.finalize()


def aem(aem_key: bytes, rpi_bytes: bytes, metadata: bytes) -> bytes:
    _check_len("metadata", metadata, 4)
    encryptor = Cipher(algorithms.AES(aem_key), modes.CTR(rpi_bytes)).encryptor()
    return encryptor.update(metadata) + encryptor.finalize()


def metadata_v1(tx_power: int) -> bytes:
    if not -127 <= tx_power <= 127:
        raise ValueError(f"TX power {tx_power} dBm is outside -127..127")
    return bytes([0x40, tx_power & 0xFF, 0, 0])


def gaen_payload(rpi_bytes: bytes, aem_bytes: bytes) -> bytes:
    """The 31-byte advertising data: flags, 16-bit UUID list, service data."""
    payload = (bytes([0x02, 0x01, 0x1A]) + bytes([0x03, 0x03]) + GAEN_UUID16
               + bytes([0x17, 0x16]) + GAEN_UUID16 + rpi_bytes + aem_bytes)
    assert len(payload) == 31
    return payload


def enin_at(unix_seconds: float) -> int:
    return int(unix_seconds // ENIN_SECONDS)


def non_resolvable_address(random_bytes: bytes) -> bytes:
    """Big-endian 6 bytes: top two bits 00, neither all zeros nor all ones in the rest."""
    _check_len("random bytes", random_bytes, 6)
    address = bytes([random_bytes[0] & 0x3F]) + random_bytes[1:]
    rest = int.from_bytes(address, "big")
    if rest in (0, (1 << 46) - 1):
        raise ValueError("random address bits are all 0 or all 1")
    return address


def _check_len(what: str, value: bytes, expected: int) -> None:
    if len(value) != expected:
        raise ValueError(f"{what} must be {expected} bytes, got {len(value)}")


class ScaledClock:
    """The key schedule's clock: real time, or `scale` times faster from now on, starting
    at the real time or at the start of interval `start_enin`. With scale 0 (and an ENIN)
    the clock stands still at that interval."""

    def __init__(self, scale: float, start_enin: int | None) -> None:
        if scale < 0:
            raise ValueError("--time-scale must be >= 0")
        self.scale = scale
        self.real_start = time.time()
        self.start = start_enin * ENIN_SECONDS if start_enin is not None else self.real_start

    def now(self) -> float:
        return self.start + (time.time() - self.real_start) * self.scale

    def seconds_to_next_interval(self) -> float:
        if self.scale == 0:
            return 3600.0
        virtual_left = (enin_at(self.now()) + 1) * ENIN_SECONDS - self.now()
        return max(0.01, virtual_left / self.scale)


# -----------------------------------------------------------------------------
# Bumble host
# -----------------------------------------------------------------------------
async def open_device(spec: str):
    from bumble import hci
    from bumble.device import Device
    from bumble.transport import open_transport

    transport = await open_transport(spec)
    device = Device.with_hci("gaen-peer", hci.Address("F0:F1:F2:F3:F4:F5"),
                             transport.source, transport.sink)
    await device.power_on()
    return transport, device


def report_line(report) -> dict:
    from bumble import hci

    if isinstance(report, hci.HCI_LE_Extended_Advertising_Report_Event.Report):
        kind = "extended"
        event_type = int(report.event_type) & 0x1F
        pdu = EXT_LEGACY_PDU_NAMES.get(event_type, f"EXT_0x{event_type:02x}")
    else:
        kind = "legacy"
        pdu = LEGACY_PDU_NAMES.get(int(report.event_type), f"0x{int(report.event_type):02x}")
    address_type = int(report.address_type)
    return {
        "time": round(time.time(), 6),
        "address": report.address.to_string(False),
        "address_type": {0: "public", 1: "random"}.get(address_type, str(address_type)),
        "pdu": pdu,
        "report": kind,
        "rssi": int(report.rssi) if int(report.rssi) < 128 else int(report.rssi) - 256,
        "data": bytes(report.data).hex(),
    }


async def cmd_scan(args) -> int:
    transport, device = await open_device(args.transport)
    reader_gone = asyncio.Event()

    def on_report(report) -> None:
        try:
            print(json.dumps(report_line(report)), flush=True)
        except BrokenPipeError:
            reader_gone.set()  # e.g. piped into `head`: stop quietly

    try:
        device.host.on("advertising_report", on_report)
        await device.start_scanning(legacy=not args.extended, active=args.active,
                                    scan_interval=args.interval_ms,
                                    scan_window=args.window_ms or args.interval_ms,
                                    filter_duplicates=False)
        try:
            await asyncio.wait_for(reader_gone.wait(), timeout=args.duration)
        except asyncio.TimeoutError:
            pass
        await device.stop_scanning(legacy=not args.extended)
    finally:
        await transport.close()
    return 0


async def cmd_advertise_gaen(args) -> int:
    from bumble import hci

    tek = bytes.fromhex(args.tek)
    metadata = bytes.fromhex(args.metadata) if args.metadata else metadata_v1(args.tx_power)
    keys = (rpik(tek), aemk(tek))
    units = round(args.interval_ms / 0.625)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if args.duration:
        loop.call_later(args.duration, stop.set)

    transport, device = await open_device(args.transport)
    try:
        await device.send_sync_command(hci.HCI_LE_Set_Advertising_Enable_Command(
            advertising_enable=0))
        await device.send_sync_command(hci.HCI_LE_Set_Advertising_Parameters_Command(
            advertising_interval_min=units, advertising_interval_max=units,
            advertising_type=3,  # ADV_NONCONN_IND
            own_address_type=hci.OwnAddressType.RANDOM,
            peer_address_type=0, peer_address=hci.Address.ANY,
            advertising_channel_map=0x07, advertising_filter_policy=0))
        current = None
        enabled = False
        clock = ScaledClock(args.time_scale, args.enin)
        while not stop.is_set():
            enin = enin_at(clock.now())
            if enin != current:
                current = enin
                rpi_bytes = rpi(keys[0], enin)
                aem_bytes = aem(keys[1], rpi_bytes, metadata)
                address = hci.Address(non_resolvable_address(os.urandom(6))[::-1],
                                      hci.Address.RANDOM_DEVICE_ADDRESS)
                # Rotation as one operation: address, RPI and AEM change together.
                if enabled:
                    await device.send_sync_command(
                        hci.HCI_LE_Set_Advertising_Enable_Command(advertising_enable=0))
                await device.send_sync_command(
                    hci.HCI_LE_Set_Random_Address_Command(random_address=address))
                await device.send_sync_command(hci.HCI_LE_Set_Advertising_Data_Command(
                    advertising_data=gaen_payload(rpi_bytes, aem_bytes)))
                await device.send_sync_command(
                    hci.HCI_LE_Set_Advertising_Enable_Command(advertising_enable=1))
                enabled = True
                print(json.dumps({"time": round(time.time(), 6),
                                  "clock": round(clock.now(), 3),
                                  "address": address.to_string(False), "enin": enin,
                                  "rpi": rpi_bytes.hex(), "aem": aem_bytes.hex(),
                                  "metadata": metadata.hex(),
                                  "interval_ms": units * 0.625}), flush=True)
            try:
                await asyncio.wait_for(stop.wait(), timeout=clock.seconds_to_next_interval())
            except asyncio.TimeoutError:
                pass
        if enabled:
            await device.send_sync_command(
                hci.HCI_LE_Set_Advertising_Enable_Command(advertising_enable=0))
    finally:
        await transport.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Independent GAEN peer on a Bumble host.")
    sub = parser.add_subparsers(dest="command", required=True)

    scan = sub.add_parser("scan", help="print one JSON line per advertising report")
    scan.add_argument("--transport", required=True, help="e.g. tcp-client:127.0.0.1:PORT")
    scan.add_argument("--duration", type=float, required=True, help="seconds")
    scan.add_argument("--extended", action="store_true",
                      help="use the extended scan commands (default: legacy)")
    scan.add_argument("--active", action="store_true", help="active scan (default: passive)")
    scan.add_argument("--interval-ms", type=float, default=60.0)
    scan.add_argument("--window-ms", type=float, help="default: equal to the interval")

    adv = sub.add_parser("advertise-gaen", help="advertise GAEN beacons for a TEK")
    adv.add_argument("--transport", required=True)
    adv.add_argument("--tek", required=True, help="16-byte TEK, hex")
    adv.add_argument("--tx-power", type=int, default=-20,
                     help="dBm written into the metadata (calibrated TX power)")
    adv.add_argument("--metadata", help="4 bytes hex; overrides --tx-power")
    adv.add_argument("--interval-ms", type=float, default=250.0)
    adv.add_argument("--enin", type=int,
                     help="start at this ENIntervalNumber instead of now (with the default "
                          "--time-scale 0 it stays there)")
    adv.add_argument("--time-scale", type=float,
                     help="run the key schedule N times faster than real time (an interval "
                          "lasts 600/N s); default 1, or 0 (fixed interval) with --enin")
    adv.add_argument("--duration", type=float, help="seconds (default: until SIGTERM)")

    args = parser.parse_args(argv)
    try:
        if args.command == "scan":
            return asyncio.run(cmd_scan(args))
        if args.time_scale is None:
            args.time_scale = 0.0 if args.enin is not None else 1.0
        if len(bytes.fromhex(args.tek)) != 16:
            raise ValueError("--tek must be 16 bytes of hex")
        if args.metadata and len(bytes.fromhex(args.metadata)) != 4:
            raise ValueError("--metadata must be 4 bytes of hex")
        return asyncio.run(cmd_advertise_gaen(args))
    except ValueError as error:
        print(f"peer: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
