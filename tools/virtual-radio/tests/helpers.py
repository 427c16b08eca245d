"""Helpers for the virtual radio's own tests: start vradio.py as a subprocess exactly as
other test suites do, talk to its control channel, and drive its controllers from real
Bumble hosts or from a raw H4 client."""

from __future__ import annotations

import asyncio
import json
import select
import socket
import subprocess
import sys
import time
from pathlib import Path

TOOL_DIR = Path(__file__).resolve().parents[1]
REPO = TOOL_DIR.parents[1]
VRADIO = TOOL_DIR / "vradio.py"
PEER = TOOL_DIR / "peer.py"
FIXTURES = REPO / "Tests" / "ENProtocolTests" / "Fixtures"
sys.path.insert(0, str(TOOL_DIR))


class Radio:
    """One vradio.py process; `ready` is its readiness JSON line."""

    def __init__(self, config: dict, tmp_path: Path) -> None:
        config = {"control": "tcp:127.0.0.1:0", **config}
        path = tmp_path / f"vradio-{id(self)}.json"
        path.write_text(json.dumps(config))
        # stderr to a file: a full pipe nobody reads would block the harness.
        self.log_path = tmp_path / f"vradio-{id(self)}.log"
        self.log = open(self.log_path, "w+", encoding="utf-8")
        self.proc = subprocess.Popen(
            [sys.executable, str(VRADIO), "--config", str(path)],
            stdout=subprocess.PIPE, stderr=self.log, text=True,
        )
        # A start limit, not a pause: Python importing Bumble takes seconds on an idle machine
        # and far longer where other builds and test runs share the cores.
        self.ready = self._wait_ready(timeout=120)
        host, port = self.ready["control"][len("tcp:"):].rsplit(":", 1)
        self.control_sock = socket.create_connection((host, int(port)), timeout=60)
        self.control_file = self.control_sock.makefile("rw", encoding="utf-8")

    def _wait_ready(self, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        assert self.proc.stdout is not None
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.1)
            if ready:
                line = self.proc.stdout.readline()
                if line:
                    return json.loads(line)
            if self.proc.poll() is not None:
                raise RuntimeError(f"vradio exited: {self.log_path.read_text()}")
        raise TimeoutError("vradio not ready")

    def bumble(self, device: str) -> str:
        return self.ready["devices"][device]["bumble"]

    def tcp(self, device: str) -> tuple[str, int]:
        host, port = self.ready["devices"][device]["connect"][len("tcp:"):].rsplit(":", 1)
        return host, int(port)

    def control(self, **request) -> dict:
        self.control_file.write(json.dumps(request) + "\n")
        self.control_file.flush()
        return json.loads(self.control_file.readline())

    def ok(self, **request) -> dict:
        reply = self.control(**request)
        assert reply["ok"], reply
        return reply

    def stats(self, device: str) -> dict:
        return self.ok(cmd="stats", device=device)["stats"][device]

    def state(self, device: str) -> dict:
        return self.ok(cmd="state", device=device)["state"]

    def stop(self) -> str:
        try:
            self.control_sock.close()
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.log.close()
        return self.log_path.read_text()


# -----------------------------------------------------------------------------
# Bumble host helpers
# -----------------------------------------------------------------------------
async def open_host(spec: str):
    from bumble import hci
    from bumble.device import Device
    from bumble.transport import open_transport

    transport = await open_transport(spec)
    device = Device.with_hci("test-host", hci.Address("F0:F1:F2:F3:F4:F5"),
                             transport.source, transport.sink)
    await device.power_on()
    return transport, device


async def start_legacy_advertiser(device, adv_type=3, interval_units=0x00A0,
                                  data=b"\x02\x01\x1a", scan_rsp=b"",
                                  address="C1:22:33:44:55:66"):
    """Legacy advertising commands, own address random, as gaend uses them."""
    from bumble import hci

    await device.send_sync_command(hci.HCI_LE_Set_Advertising_Parameters_Command(
        advertising_interval_min=interval_units, advertising_interval_max=interval_units,
        advertising_type=adv_type, own_address_type=hci.OwnAddressType.RANDOM,
        peer_address_type=0, peer_address=hci.Address.ANY,
        advertising_channel_map=0x07, advertising_filter_policy=0))
    await device.send_sync_command(hci.HCI_LE_Set_Random_Address_Command(
        random_address=hci.Address(address, hci.Address.RANDOM_DEVICE_ADDRESS)))
    await device.send_sync_command(hci.HCI_LE_Set_Advertising_Data_Command(
        advertising_data=data))
    if scan_rsp:
        await device.send_sync_command(hci.HCI_LE_Set_Scan_Response_Data_Command(
            scan_response_data=scan_rsp))
    await device.send_sync_command(hci.HCI_LE_Set_Advertising_Enable_Command(
        advertising_enable=1))


async def stop_legacy_advertiser(device):
    from bumble import hci

    await device.send_sync_command(hci.HCI_LE_Set_Advertising_Enable_Command(
        advertising_enable=0))


class ReportCollector:
    """Raw advertising reports as the Bumble host decoded them, with arrival times."""

    def __init__(self, device) -> None:
        self.reports: list = []
        self.times: list[float] = []
        device.host.on("advertising_report", self._on_report)

    def _on_report(self, report) -> None:
        self.reports.append(report)
        self.times.append(asyncio.get_running_loop().time())

    def clear(self) -> None:
        self.reports.clear()
        self.times.clear()


# -----------------------------------------------------------------------------
# Raw H4 client, for byte-exact checks of replies and injected faults
# -----------------------------------------------------------------------------
class H4Client:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def connect(cls, address: tuple[str, int]) -> H4Client:
        reader, writer = await asyncio.open_connection(*address)
        return cls(reader, writer)

    @classmethod
    async def connect_unix(cls, path: str) -> H4Client:
        reader, writer = await asyncio.open_unix_connection(path)
        return cls(reader, writer)

    def send(self, opcode: int, params: bytes = b"") -> None:
        self.writer.write(bytes([0x01]) + opcode.to_bytes(2, "little")
                          + bytes([len(params)]) + params)

    async def event(self, timeout: float = 2.0) -> bytes:
        """One whole event packet (H4 indicator included)."""
        header = await asyncio.wait_for(self.reader.readexactly(3), timeout)
        assert header[0] == 0x04, header.hex()
        body = await asyncio.wait_for(self.reader.readexactly(header[2]), timeout)
        return header + body

    async def command(self, opcode: int, params: bytes = b"", timeout: float = 2.0) -> bytes:
        """Sends a command and returns its Command Complete/Status, skipping other events."""
        self.send(opcode, params)
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            remaining = deadline - asyncio.get_running_loop().time()
            event = await self.event(max(remaining, 0.01))
            if event[1] == 0x0E and int.from_bytes(event[4:6], "little") == opcode:
                return event
            if event[1] == 0x0F and int.from_bytes(event[5:7], "little") == opcode:
                return event

    async def close(self) -> None:
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except ConnectionError:
            pass


def run(coro):
    return asyncio.run(coro)
