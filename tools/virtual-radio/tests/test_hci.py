"""HCI-level behaviour and fault injection, checked byte by byte with a raw H4 client."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time

import pytest

from helpers import VRADIO, H4Client, run

RESET = 0x0C03
LE_SET_EVENT_MASK = 0x2001
LE_SET_RANDOM_ADDRESS = 0x2005
LE_SET_ADV_PARAMS = 0x2006
LE_READ_ADV_TX_POWER = 0x2007
LE_SET_ADV_DATA = 0x2008
LE_SET_ADV_ENABLE = 0x200A
LE_SET_SCAN_ENABLE = 0x200C
LE_READ_TRANSMIT_POWER = 0x204B
INQUIRY = 0x0401  # known to Bumble as a Command Status command, not implemented
VENDOR = 0xFC01


def _status_of_complete(event: bytes) -> int:
    assert event[1] == 0x0E, event.hex()
    return event[6]


async def _advertise(client: H4Client) -> None:
    params = (0x00A0).to_bytes(2, "little") * 2 + bytes([0x03, 0x01, 0x00]) + bytes(6) \
        + bytes([0x07, 0x00])
    assert _status_of_complete(await client.command(LE_SET_ADV_PARAMS, params)) == 0
    address = bytes.fromhex("665544332211")[:5] + b"\xc1"
    assert _status_of_complete(await client.command(LE_SET_RANDOM_ADDRESS, address)) == 0
    data = bytes([3, 0x02, 0x01, 0x1A]) + bytes(28)
    assert _status_of_complete(await client.command(LE_SET_ADV_DATA, data)) == 0
    assert _status_of_complete(await client.command(LE_SET_ADV_ENABLE, b"\x01")) == 0


def test_unknown_commands_get_unknown_hci_command_status(radio):
    r = radio()

    async def scenario():
        client = await H4Client.connect(r.tcp("a"))
        vendor = await client.command(VENDOR, b"\x01\x02")
        inquiry = await client.command(INQUIRY, bytes([0x33, 0x8B, 0x9E, 0x08, 0x00]))
        reset = await client.command(RESET)
        await client.close()
        return vendor, inquiry, reset

    vendor, inquiry, reset = run(scenario())
    assert vendor == bytes.fromhex("040e040101fc01")  # Command Complete, Unknown HCI Command
    assert inquiry == bytes.fromhex("040f0401010104")  # Command Status, Unknown HCI Command
    assert reset == bytes.fromhex("040e0401030c00")


def test_malformed_command_parameters_are_answered(radio):
    r = radio()

    async def scenario():
        client = await H4Client.connect(r.tcp("a"))
        # LE Set Advertising Enable needs one parameter byte; send none.
        event = await client.command(LE_SET_ADV_ENABLE, b"")
        await client.close()
        return event

    assert _status_of_complete(run(scenario())) == 0x12


def test_read_advertising_tx_power_returns_configured_power(radio):
    r = radio(devices=[{"name": "a", "transport": "tcp-server:127.0.0.1:0", "tx_power": -7}])

    async def scenario():
        client = await H4Client.connect(r.tcp("a"))
        event = await client.command(LE_READ_ADV_TX_POWER)
        r.ok(cmd="set", device="a", tx_power=5)
        event2 = await client.command(LE_READ_ADV_TX_POWER)
        await client.close()
        return event, event2

    event, event2 = run(scenario())
    assert _status_of_complete(event) == 0 and event[7] == (-7) & 0xFF
    assert event2[7] == 5


def test_read_transmit_power_answers_signed_powers(radio):
    """LE Read Transmit Power's Min_TX_Power and Max_TX_Power are signed octets (-127...20 dBm):
    a negative power is answered (it was refused by Bumble's unsigned field, and the kernel's
    controller setup waited for the answer forever), an out-of-range one is clamped."""
    r = radio(devices=[{"name": "a", "transport": "tcp-server:127.0.0.1:0", "tx_power": -7}])

    async def scenario():
        client = await H4Client.connect(r.tcp("a"))
        events = [await client.command(LE_READ_TRANSMIT_POWER)]
        for power in (5, -127, -200, 25, 0):
            r.ok(cmd="set", device="a", tx_power=power)
            events.append(await client.command(LE_READ_TRANSMIT_POWER))
        await client.close()
        return events

    events = run(scenario())
    # Command Complete (6 bytes): 1 command, the opcode, success, min, max.
    powers = [-7, 5, -127, -127, 20, 0]
    for event, power in zip(events, powers):
        assert event == bytes([0x04, 0x0E, 0x06, 0x01]) + LE_READ_TRANSMIT_POWER.to_bytes(2, "little") \
            + bytes([0x00, power & 0xFF, power & 0xFF]), (power, event.hex())
    assert len(events) == len(powers)


def test_invalid_advertising_interval_is_rejected(radio):
    r = radio()

    async def scenario():
        client = await H4Client.connect(r.tcp("a"))
        params = (0x0010).to_bytes(2, "little") * 2 + bytes([0x03, 0x01, 0x00]) + bytes(6) \
            + bytes([0x07, 0x00])
        event = await client.command(LE_SET_ADV_PARAMS, params)
        await client.close()
        return event

    assert _status_of_complete(run(scenario())) == 0x12


def test_drop_closes_connection_resets_state_and_serves_again(radio):
    r = radio()

    async def scenario():
        client = await H4Client.connect(r.tcp("a"))
        await _advertise(client)
        assert r.state("a")["advertising"]
        r.ok(cmd="drop", device="a")
        eof = await asyncio.wait_for(client.reader.read(), 2)
        await client.close()
        state = r.state("a")
        again = await H4Client.connect(r.tcp("a"))
        reset = await again.command(RESET)
        await again.close()
        return eof, state, reset

    eof, state, reset = run(scenario())
    assert eof == b""
    assert not state["advertising"] and not state["host_connected"]
    assert _status_of_complete(reset) == 0


def test_drop_keep_state_and_refuse_window(radio):
    r = radio()

    async def scenario():
        client = await H4Client.connect(r.tcp("a"))
        await _advertise(client)
        r.ok(cmd="drop", device="a", keep_state=True, refuse_seconds=0.6)
        await asyncio.wait_for(client.reader.read(), 2)
        await client.close()
        refused = False
        try:
            await H4Client.connect(r.tcp("a"))
        except ConnectionRefusedError:
            refused = True
        still_advertising = r.state("a")["advertising"]
        await asyncio.sleep(0.8)
        again = await H4Client.connect(r.tcp("a"))
        reset = await again.command(RESET)
        await again.close()
        return refused, still_advertising, reset

    refused, still_advertising, reset = run(scenario())
    assert refused
    assert still_advertising
    assert _status_of_complete(reset) == 0


def test_hardware_error_event_is_injected(radio):
    r = radio()

    async def scenario():
        client = await H4Client.connect(r.tcp("a"))
        await client.command(RESET)
        r.ok(cmd="hardware_error", device="a", code=0x42)
        event = await client.event()
        await client.close()
        return event

    assert run(scenario()) == bytes.fromhex("04100142")


def test_hardware_error_honours_event_mask_unless_forced(radio):
    r = radio()

    async def scenario():
        client = await H4Client.connect(r.tcp("a"))
        mask = (0x00001FFFFFFFFFFF & ~(1 << 15)).to_bytes(8, "little")
        assert _status_of_complete(await client.command(0x0C01, mask)) == 0
        r.ok(cmd="hardware_error", device="a", code=1)
        with pytest.raises(asyncio.TimeoutError):
            await client.event(timeout=0.3)
        r.ok(cmd="hardware_error", device="a", code=2, force=True)
        event = await client.event()
        await client.close()
        return event

    assert run(scenario()) == bytes.fromhex("04100102")


def test_no_reply_swallows_the_next_matching_command_only(radio):
    r = radio()

    async def scenario():
        client = await H4Client.connect(r.tcp("a"))
        r.ok(cmd="no_reply", device="a", opcode="0x200a")
        # A different opcode is still answered.
        assert _status_of_complete(await client.command(LE_READ_ADV_TX_POWER)) == 0
        client.send(LE_SET_ADV_ENABLE, b"\x00")
        with pytest.raises(asyncio.TimeoutError):
            await client.event(timeout=0.5)
        # The fault is used up: the same command is answered next time.
        answered = await client.command(LE_SET_ADV_ENABLE, b"\x00")
        await client.close()
        return answered

    assert _status_of_complete(run(scenario())) == 0
    assert r.stats("a")["fault_no_reply"] == 1


def test_disallow_answers_command_disallowed_without_executing(radio):
    r = radio()

    async def scenario():
        client = await H4Client.connect(r.tcp("a"))
        r.ok(cmd="disallow", device="a", opcode="0x0c03")
        disallowed = await client.command(RESET)
        ok = await client.command(RESET)
        # Async commands get it in a Command Status.
        r.ok(cmd="disallow", device="a", opcode=f"0x{INQUIRY:04x}")
        status = await client.command(INQUIRY, bytes([0x33, 0x8B, 0x9E, 0x08, 0x00]))
        await client.close()
        return disallowed, ok, status

    disallowed, ok, status = run(scenario())
    assert disallowed == bytes.fromhex("040e0401030c0c")
    assert ok == bytes.fromhex("040e0401030c00")
    assert status == bytes.fromhex("040f040c010104")


def test_disallowed_advertising_enable_leaves_advertising_off(radio):
    r = radio()

    async def scenario():
        client = await H4Client.connect(r.tcp("a"))
        r.ok(cmd="disallow", device="a", opcode="0x200a")
        with pytest.raises(AssertionError):
            await _advertise(client)
        await client.close()

    run(scenario())
    assert not r.state("a")["advertising"]


def test_random_address_is_refused_while_scanning_or_advertising(radio):
    """Core Vol 4 Part E 7.8.4, as the Pi's controllers enforce it: LE Set Random Address is
    Command Disallowed while scanning or legacy advertising is enabled, accepted once both are
    off; the counters say which happened."""
    r = radio()
    address = bytes.fromhex("665544332211")[:5] + b"\x01"

    async def scenario():
        client = await H4Client.connect(r.tcp("a"))
        statuses = []
        assert _status_of_complete(await client.command(LE_SET_SCAN_ENABLE, b"\x01\x00")) == 0
        statuses.append(_status_of_complete(await client.command(LE_SET_RANDOM_ADDRESS, address)))
        assert _status_of_complete(await client.command(LE_SET_SCAN_ENABLE, b"\x00\x00")) == 0
        statuses.append(_status_of_complete(await client.command(LE_SET_RANDOM_ADDRESS, address)))
        await _advertise(client)
        statuses.append(_status_of_complete(await client.command(LE_SET_RANDOM_ADDRESS, address)))
        assert _status_of_complete(await client.command(LE_SET_ADV_ENABLE, b"\x00")) == 0
        statuses.append(_status_of_complete(await client.command(LE_SET_RANDOM_ADDRESS, address)))
        await client.close()
        return statuses

    assert run(scenario()) == [0x0C, 0x00, 0x0C, 0x00]
    stats = r.stats("a")
    assert stats["random_address_refused"] == 2, stats
    assert stats["random_address_set"] == 3, stats  # two here, one inside _advertise


@pytest.mark.parametrize("kind,expected", [
    ("truncated", "043e0a02010301000000000000"),
    ("truncated_command_complete", "040e020103"),
    ("bad_packet_type", "070000"),
    ("short_frame", "040e0a01030c"),
    ("raw", "04ff0100"),
])
def test_injected_bytes_reach_the_host_verbatim(radio, kind, expected):
    r = radio()

    async def scenario():
        client = await H4Client.connect(r.tcp("a"))
        await client.command(RESET)
        reply = r.ok(cmd="inject", device="a", kind=kind, hex="04ff0100")
        data = await asyncio.wait_for(client.reader.readexactly(len(expected) // 2), 2)
        await client.close()
        return reply, data

    reply, data = run(scenario())
    assert data.hex() == expected == reply["bytes"]


def test_garbled_event_is_well_framed_with_unassigned_code(radio):
    r = radio()

    async def scenario():
        client = await H4Client.connect(r.tcp("a"))
        await client.command(RESET)
        r.ok(cmd="inject", device="a", kind="garbled")
        event = await client.event()
        # The stream stays usable afterwards.
        reset = await client.command(RESET)
        await client.close()
        return event, reset

    event, reset = run(scenario())
    assert event[1] == 0xFE and len(event) == 3 + event[2] == 11
    assert _status_of_complete(reset) == 0


def test_hang_swallows_everything_until_reconnect(radio):
    r = radio()

    async def scenario():
        before = r.stats("a").get("host_connections", 0)
        client = await H4Client.connect(r.tcp("a"))
        # The TCP connect returns before vradio has taken the host on (which clears a hang):
        # hang only once it has, or the hang is cleared under us.
        for _ in range(100):
            if r.stats("a").get("host_connections", 0) > before:
                break
            await asyncio.sleep(0.02)
        r.ok(cmd="hang", device="a")
        client.send(RESET)
        with pytest.raises(asyncio.TimeoutError):
            await client.event(timeout=0.4)
        await client.close()
        await asyncio.sleep(0.1)
        again = await H4Client.connect(r.tcp("a"))
        reset = await again.command(RESET)
        await again.close()
        return reset

    assert _status_of_complete(run(scenario())) == 0


def test_redundant_scan_disable_quirk(radio):
    r = radio(devices=[
        {"name": "a", "transport": "tcp-server:127.0.0.1:0"},
        {"name": "pi", "transport": "tcp-server:127.0.0.1:0",
         "quirk_disallow_redundant_scan_disable": True}])

    async def scenario():
        results = []
        for name in ("a", "pi"):
            client = await H4Client.connect(r.tcp(name))
            results.append(_status_of_complete(await client.command(LE_SET_SCAN_ENABLE, b"\x00\x00")))
            await client.close()
        return results

    assert run(scenario()) == [0x00, 0x0C]


def test_second_host_is_turned_away(radio):
    r = radio()

    async def scenario():
        first = await H4Client.connect(r.tcp("a"))
        await first.command(RESET)
        second = await H4Client.connect(r.tcp("a"))
        eof = await asyncio.wait_for(second.reader.read(), 2)
        ok = await first.command(RESET)
        await first.close()
        await second.close()
        return eof, ok

    eof, ok = run(scenario())
    assert eof == b"" and _status_of_complete(ok) == 0


def test_unix_and_pty_transports(radio, tmp_path):
    unix_path = str(tmp_path / "ctl.sock")
    pty_path = str(tmp_path / "uart")
    r = radio(devices=[{"name": "u", "transport": f"unix-server:{unix_path}"},
                       {"name": "p", "transport": f"pty:{pty_path}"}])
    assert r.ready["devices"]["u"]["connect"] == f"unix:{unix_path}"
    assert r.ready["devices"]["p"]["connect"] == f"serial:{pty_path}"

    async def scenario():
        client = await H4Client.connect_unix(unix_path)
        reset = await client.command(RESET)
        await client.close()
        return reset

    assert _status_of_complete(run(scenario())) == 0

    fd = os.open(pty_path, os.O_RDWR | os.O_NOCTTY)
    try:
        import tty
        tty.setraw(fd)
        os.write(fd, bytes.fromhex("01030c00"))
        deadline = time.monotonic() + 3
        data = b""
        while len(data) < 7 and time.monotonic() < deadline:
            data += os.read(fd, 7 - len(data))
    finally:
        os.close(fd)
    assert data == bytes.fromhex("040e0401030c00")


def test_control_channel_errors_and_help(radio):
    r = radio()
    assert r.control(cmd="nope")["ok"] is False
    assert "unknown device" in r.control(cmd="move", device="zz", position=[1, 2, 3])["error"]
    assert r.control(cmd="channel", loss=2)["ok"] is False
    reply = r.ok(cmd="help", id=5)
    assert reply["id"] == 5 and "move" in reply["commands"]
    moved = r.ok(cmd="move", device="b", position=[10, 0, 0])
    assert moved["position"] == [10.0, 0.0, 0.0]
    rssi = r.ok(cmd="rssi", **{"from": "a", "to": "b"})
    assert rssi["mean_rssi"] == pytest.approx(-(40 + 20))


def test_cli_devices_unix_control_and_ready_file(tmp_path):
    control = tmp_path / "control.sock"
    ready_file = tmp_path / "ready.json"
    proc = subprocess.Popen(
        [sys.executable, str(VRADIO), "--device", "name=x,transport=tcp-server:127.0.0.1:0,x=1",
         "--device", "name=y,transport=tcp-server:127.0.0.1:0,tx_power=3",
         "--control", f"unix:{control}", "--preset", "dp3t", "--seed", "3",
         "--ready-file", str(ready_file)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ready = json.loads(proc.stdout.readline())
        assert ready["ready"] and set(ready["devices"]) == {"x", "y"}
        assert ready["channel"]["a1m"] == 62.0 and ready["seed"] == 3
        assert json.loads(ready_file.read_text()) == ready
        with socket.socket(socket.AF_UNIX) as sock:
            sock.connect(str(control))
            sock.sendall(b'{"cmd":"list"}\n')
            reply = json.loads(sock.makefile().readline())
        assert reply["ok"] and reply["devices"]["y"]["tx_power"] == 3
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert not control.exists()


def test_restore_returns_to_the_configured_start(radio):
    r = radio()
    r.ok(cmd="move", device="b", position=[50, 0, 0])
    r.ok(cmd="set", device="a", tx_power=9)
    r.ok(cmd="channel", loss=0.5, sigma=3)
    r.ok(cmd="disallow", device="a", opcode="0x0c03")
    r.ok(cmd="restore")
    a, b = r.state("a"), r.state("b")
    assert b["position"] == [3.0, 0.0, 0.0] and a["tx_power"] == 0
    assert a["armed_faults"] == []
    channel = r.ok(cmd="channel")["channel"]
    assert channel["loss"] == 0.0 and channel["sigma"] == 0.0


def test_extended_scan_duration_ends_with_scan_timeout_event_when_unmasked(radio):
    r = radio()
    params = bytes([0x00, 0x00, 0x01, 0x00]) + (0x10).to_bytes(2, "little") * 2

    async def scan_for_100ms(client: H4Client) -> None:
        assert _status_of_complete(await client.command(0x2041, params)) == 0
        enable = bytes([0x01, 0x00]) + (10).to_bytes(2, "little") + bytes(2)
        assert _status_of_complete(await client.command(0x2042, enable)) == 0

    async def scenario():
        client = await H4Client.connect(r.tcp("a"))
        # The spec's default event mask leaves LE Meta (bit 61) off: switch it on.
        mask = (0x00001FFFFFFFFFFF | 1 << 61).to_bytes(8, "little")
        assert _status_of_complete(await client.command(0x0C01, mask)) == 0
        await scan_for_100ms(client)  # default LE mask: no Scan Timeout event (bit 16)
        with pytest.raises(asyncio.TimeoutError):
            await client.event(timeout=0.4)
        assert not r.state("a")["scanning"]
        mask = (0x1F | 1 << 16).to_bytes(8, "little")
        assert _status_of_complete(await client.command(LE_SET_EVENT_MASK, mask)) == 0
        await scan_for_100ms(client)
        event = await client.event(timeout=1)
        await client.close()
        return event

    assert run(scenario()) == bytes.fromhex("043e0111")


def test_bad_h4_packet_type_from_host_closes_the_connection(radio):
    r = radio()

    async def scenario():
        client = await H4Client.connect(r.tcp("a"))
        await client.command(RESET)
        client.writer.write(b"\x09\x00\x00")
        eof = await asyncio.wait_for(client.reader.read(), 2)
        await client.close()
        again = await H4Client.connect(r.tcp("a"))
        reset = await again.command(RESET)
        await again.close()
        return eof, reset

    eof, reset = run(scenario())
    assert eof == b"" and _status_of_complete(reset) == 0
    assert r.stats("a")["host_framing_errors"] == 1


def test_commands_split_into_single_bytes_are_framed(radio):
    r = radio()

    async def scenario():
        client = await H4Client.connect(r.tcp("a"))
        for byte in bytes.fromhex("01030c00"):
            client.writer.write(bytes([byte]))
            await client.writer.drain()
            await asyncio.sleep(0.01)
        event = await client.event()
        await client.close()
        return event

    assert run(scenario()) == bytes.fromhex("040e0401030c00")


def test_supported_commands_list_extended_advertising_and_scanning(radio):
    r = radio()

    async def scenario():
        client = await H4Client.connect(r.tcp("a"))
        event = await client.command(0x1002)  # Read Local Supported Commands
        await client.close()
        return event

    event = run(scenario())
    assert _status_of_complete(event) == 0 and len(event) == 7 + 64
    octets = event[7:]
    # Core spec Vol 4, Part E, 6.27: octet 36 bits 1-7 (advertising set random address ..
    # number of supported sets), octet 37 bits 0-1 (remove/clear sets), 5-6 (extended scan).
    assert octets[36] & 0b11111110 == 0b11111110
    assert octets[37] & 0b01100011 == 0b01100011


def test_flood_delivers_distinct_gaen_reports_only_while_scanning(radio):
    r = radio(devices=[{"name": "a", "transport": "tcp-server:127.0.0.1:0"}])

    async def scenario():
        client = await H4Client.connect(r.tcp("a"))
        await client.command(RESET)
        await client.command(0x0C01, (0x20001FFFFFFFFFFF).to_bytes(8, "little"))  # Set Event Mask: LE Meta on
        r.ok(cmd="flood", device="a", rate=600, seconds=30)
        await asyncio.sleep(0.3)  # not scanning: nothing delivered
        await client.command(LE_SET_SCAN_ENABLE, b"\x01\x00")
        reports = []
        deadline = asyncio.get_running_loop().time() + 1.0
        while asyncio.get_running_loop().time() < deadline:
            event = await client.event(2.0)
            if event[1] == 0x3E and event[3] == 0x02:
                n = event[4]
                offset = 5
                for _ in range(n):
                    data_len = event[offset + 8]
                    data = event[offset + 9:offset + 9 + data_len]
                    reports.append((event[offset + 2:offset + 8], data))
                    offset += 10 + data_len
        await client.command(LE_SET_SCAN_ENABLE, b"\x00\x00")
        r.ok(cmd="flood", device="a", rate=0)
        await client.close()
        return reports

    reports = run(scenario())
    stats = r.stats("a")
    assert 300 <= len(reports) <= 900, len(reports)
    assert all(d[:11] == bytes.fromhex("02011a03036ffd17166ffd") and len(d) == 31 for _, d in reports)
    assert len({d[11:27] for _, d in reports}) == len(reports)  # distinct RPIs
    assert stats["flood_not_scanning"] > 0 and stats["flood_reports"] >= len(reports)
