#!/usr/bin/env python3
"""Virtual radio for gaend's tests: any number of Bumble virtual controllers on one
simulated link, each served to an HCI host over H4 (TCP, Unix socket or pty).

The stock Bumble controller (0.0.236) has gaps that matter to a GAEN node; the subclasses
below fix them:
- legacy ADV_NONCONN_IND / ADV_SCAN_IND / ADV_IND are transmitted and reported as legacy
  LE Advertising Reports (0x02) to hosts that used the legacy scan commands; extended
  reports (0x0D) only go to hosts that enabled scanning with the extended commands;
- advertising interval in 0.625 ms units plus the spec's 0-10 ms pseudo-random advDelay
  (Core spec Vol 6, Part B, 4.4.2.2.1);
- per-receiver RSSI from positions, TX power and a log-distance channel model with
  shadowing; packet loss; receiver sensitivity;
- scan window/interval duty cycle, scan enable, duplicate filter and event masks honoured;
- HCI Reset resets advertising, scanning and masks; unknown commands get Unknown HCI
  Command (0x01) instead of silence; LE Read Advertising Physical Channel Tx Power returns
  the configured TX power.
It also injects faults for the HCI host's tests and takes orders on a JSON-lines control
channel. Usage and the control protocol: tools/virtual-radio/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import logging
import math
import os
import pty
import random
import struct
import signal
import sys
import tty
from collections import Counter, deque
from typing import Any

from bumble import controller as bumble_controller
from bumble import hci, ll
from bumble import link as bumble_link
from bumble.core import InvalidPacketError
from bumble.transport.common import PacketParser

log = logging.getLogger("vradio")

# HCI status codes used here (Core spec Vol 1, Part F).
SUCCESS = 0x00
UNKNOWN_HCI_COMMAND = 0x01
HARDWARE_FAILURE = 0x03
COMMAND_DISALLOWED = 0x0C
INVALID_HCI_COMMAND_PARAMETERS = 0x12

# Legacy advertising PDU / report event types (Vol 4, Part E, 7.7.65.2).
ADV_IND = 0x00
ADV_DIRECT_IND = 0x01
ADV_SCAN_IND = 0x02
ADV_NONCONN_IND = 0x03
SCAN_RSP = 0x04
LEGACY_PDU_NAMES = {
    ADV_IND: "ADV_IND",
    ADV_DIRECT_IND: "ADV_DIRECT_IND",
    ADV_SCAN_IND: "ADV_SCAN_IND",
    ADV_NONCONN_IND: "ADV_NONCONN_IND",
    SCAN_RSP: "SCAN_RSP",
}
# Extended report event_type for a legacy PDU (Vol 4, Part E, 7.7.65.13).
EXT_EVENT_TYPE_FOR_LEGACY = {
    ADV_IND: 0b0010011,
    ADV_DIRECT_IND: 0b0010101,
    ADV_SCAN_IND: 0b0010010,
    ADV_NONCONN_IND: 0b0010000,
}
EXT_SCAN_RSP_TO_ADV_IND = 0b0011011
EXT_SCAN_RSP_TO_ADV_SCAN_IND = 0b0011010

# Spec defaults after power-up / HCI Reset (Vol 4, Part E, 7.3.1 and 7.8.1).
DEFAULT_EVENT_MASK = 0x00001FFFFFFFFFFF
DEFAULT_LE_EVENT_MASK = 0x000000000000001F
DEFAULT_ADV_INTERVAL_UNITS = 0x0800  # 1.28 s
DEFAULT_SCAN_INTERVAL_UNITS = 0x0010  # 10 ms
DEFAULT_SCAN_WINDOW_UNITS = 0x0010
UNIT_S = 0.000625  # 0.625 ms
MAX_ADV_DELAY_S = 0.010  # advDelay is 0..10 ms
EVENT_CODE_LE_META = 0x3E
NOT_MASKABLE_EVENTS = {0x0E, 0x0F, 0x13}  # Command Complete/Status, Num Completed Packets
SUBEVENT_ADVERTISING_REPORT = 0x02
SUBEVENT_EXTENDED_ADVERTISING_REPORT = 0x0D
SUBEVENT_SCAN_TIMEOUT = 0x11
EXT_REPORT_MAX_DATA = 229  # 255 event parameter bytes - subevent/num_reports/header

# Named channel models: free space, and the published measurements docs/trial.md's "Channel
# presets" table cites (DP-3T EPFL crowd experiment; Dublin bus/tram).
CHANNEL_PRESETS: dict[str, dict[str, float]] = {
    # Free space at 2.4 GHz: about 40 dB at 1 m, 20 dB/decade, no shadowing.
    "free-space": {"a1m": 40.0, "slope": 20.0, "sigma": 0.0, "loss": 0.0},
    # DP-3T EPFL crowd experiment.
    "dp3t": {"a1m": 62.0, "slope": 12.0, "sigma": 7.5, "loss": 0.0},
    # Inside a metal vehicle (Dublin bus/tram measurements).
    "vehicle": {"a1m": 62.0, "slope": 3.0, "sigma": 6.0, "loss": 0.0},
}


# -----------------------------------------------------------------------------
# Configuration
# -----------------------------------------------------------------------------
@dataclasses.dataclass
class ChannelModel:
    """Log-distance path loss: A(d) = a1m + slope * log10(d) + N(0, sigma) dB."""

    a1m: float = 40.0
    slope: float = 20.0
    sigma: float = 0.0
    loss: float = 0.0  # probability that a PDU is lost for one receiver
    min_distance: float = 0.1  # metres; closer devices are treated as this far

    def mean_attenuation(self, distance: float) -> float:
        return self.a1m + self.slope * math.log10(max(distance, self.min_distance))

    def update(self, values: dict[str, Any]) -> None:
        for key, value in values.items():
            if key == "preset":
                self.update(CHANNEL_PRESETS[value])
                continue
            if key not in {f.name for f in dataclasses.fields(self)}:
                raise ValueError(f"unknown channel parameter {key!r}")
            setattr(self, key, float(value))
        if not 0.0 <= self.loss <= 1.0:
            raise ValueError(f"loss must be within 0..1, got {self.loss}")
        if self.sigma < 0:
            raise ValueError(f"sigma must be >= 0, got {self.sigma}")


@dataclasses.dataclass
class DeviceConfig:
    name: str
    transport: str
    position: tuple[float, float, float] = (0.0, 0.0, 0.0)
    tx_power: int = 0  # dBm, also what LE Read Adv Physical Channel Tx Power returns
    sensitivity: float = -100.0  # dBm; weaker PDUs are not received
    public_address: str | None = None
    # What Read Local Version Information reports (Bluetooth SIG company identifier, Core
    # version numbers: 9 = 5.0); defaults are Bumble's (0xFFFF, 5.0).
    company_identifier: int | None = None
    hci_version: int | None = None
    lmp_version: int | None = None
    # Keep controller state when the host disconnects (default: a disconnect is a power
    # cycle, so that one test's advertising never leaks into the next).
    keep_state_on_disconnect: bool = False
    # Behave like BCM43455 (Raspberry Pi): Command Disallowed when disabling a scan that is
    # already disabled (GAEN-FACTS.md, "Known controller behaviour").
    quirk_disallow_redundant_scan_disable: bool = False

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DeviceConfig:
        data = dict(data)
        if "position" in data:
            data["position"] = _position(data["position"])
        for key in ("x", "y", "z"):
            if key in data:
                pos = list(data.get("position", (0.0, 0.0, 0.0)))
                pos["xyz".index(key)] = float(data.pop(key))
                data["position"] = tuple(pos)
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown device setting(s) {sorted(unknown)}")
        if "name" not in data or "transport" not in data:
            raise ValueError("a device needs a name and a transport")
        cfg = cls(**data)
        cfg.tx_power = int(cfg.tx_power)
        cfg.sensitivity = float(cfg.sensitivity)
        return cfg

    @classmethod
    def from_cli(cls, spec: str) -> DeviceConfig:
        """name=a,transport=tcp-server:127.0.0.1:0,x=1,y=0,z=0,tx_power=0,..."""
        data: dict[str, Any] = {}
        for part in spec.split(","):
            if "=" not in part:
                raise ValueError(f"device setting {part!r} is not key=value")
            key, value = part.split("=", 1)
            key = key.strip().replace("-", "_")
            if key in ("keep_state_on_disconnect", "quirk_disallow_redundant_scan_disable"):
                data[key] = value.lower() in ("1", "true", "yes")
            elif key in ("x", "y", "z", "sensitivity"):
                data[key] = float(value)
            elif key == "tx_power":
                data[key] = int(value)
            else:
                data[key] = value
        return cls.from_dict(data)


def _position(value: Any) -> tuple[float, float, float]:
    if isinstance(value, str):
        value = value.replace(":", ",").split(",")
    pos = [float(v) for v in value]
    if len(pos) == 2:
        pos.append(0.0)
    if len(pos) != 3:
        raise ValueError(f"position needs x, y[, z], got {value!r}")
    return (pos[0], pos[1], pos[2])


# -----------------------------------------------------------------------------
# Air interface
# -----------------------------------------------------------------------------
@dataclasses.dataclass
class LegacyAdvPdu(ll.AdvertisingPdu):
    """A legacy advertising PDU as it goes on air (the stock ll module has no
    ADV_SCAN_IND and no way to carry the scan response of a scannable PDU)."""

    pdu_type: int
    advertiser_address: hci.Address
    data: bytes
    scan_response_data: bytes = b""


@dataclasses.dataclass
class ExtAdvPdu(ll.AdvExtInd):
    """An extended (non-legacy) advertising event, with the set's event properties."""

    properties: int = 0


class RadioLink(bumble_link.LocalLink):
    """The shared medium: delivers each advertising PDU to every other controller with
    its own RSSI, after path loss, shadowing, packet loss and receiver sensitivity."""

    def __init__(self, channel: ChannelModel, seed: int) -> None:
        super().__init__()
        self.channel = channel
        self.rng = random.Random(f"link:{seed}")
        self.ordered: list[VirtualController] = []  # deterministic order for the RNG

    def add_controller(self, controller: bumble_controller.Controller) -> None:
        super().add_controller(controller)
        self.ordered.append(controller)  # type: ignore[arg-type]

    def remove_controller(self, controller: bumble_controller.Controller) -> None:
        super().remove_controller(controller)
        self.ordered.remove(controller)  # type: ignore[arg-type]

    def rssi_between(self, sender: VirtualController, receiver: VirtualController) -> float:
        distance = math.dist(sender.position, receiver.position)
        attenuation = self.channel.mean_attenuation(distance)
        if self.channel.sigma > 0:
            attenuation += self.rng.gauss(0.0, self.channel.sigma)
        return sender.tx_power - attenuation

    def send_advertising_pdu(self, sender_controller, packet) -> None:
        if not isinstance(packet, (LegacyAdvPdu, ll.AdvExtInd)):
            # Connection requests etc. are not subject to the channel model.
            super().send_advertising_pdu(sender_controller, packet)
            return
        sender: VirtualController = sender_controller
        sender.stats["pdus_sent"] += 1
        loop = asyncio.get_running_loop()
        for receiver in self.ordered:
            if receiver is sender:
                continue
            rssi = self.rssi_between(sender, receiver)
            if self.channel.loss > 0 and self.rng.random() < self.channel.loss:
                receiver.stats["pdus_lost"] += 1
                continue
            if rssi < receiver.sensitivity:
                receiver.stats["pdus_below_sensitivity"] += 1
                continue
            loop.call_soon(receiver.on_radio_pdu, packet, rssi)


# -----------------------------------------------------------------------------
# Advertisers
# -----------------------------------------------------------------------------
class _Schedule:
    """Advertising events every advInterval + advDelay (0-10 ms), with the event times
    computed from the previous event's due time so that host load causes no drift."""

    def __init__(self, controller: VirtualController, fire) -> None:
        self.controller = controller
        self.fire = fire
        self.handle: asyncio.TimerHandle | None = None
        self.interval_s = 0.0
        self.due = 0.0

    def start(self, interval_min: int, interval_max: int) -> None:
        self.stop()
        rng = self.controller.rng
        if interval_min == 0:
            interval_min = interval_max = DEFAULT_ADV_INTERVAL_UNITS
        # The controller picks one advInterval within [min, max] for this advertising run.
        units = rng.randint(min(interval_min, interval_max), max(interval_min, interval_max))
        self.interval_s = units * UNIT_S
        loop = asyncio.get_running_loop()
        self.due = loop.time()
        self.handle = loop.call_soon(self._tick)  # type: ignore[assignment]

    def _tick(self) -> None:
        loop = asyncio.get_running_loop()
        self.controller.adv_times.append(self.due)
        self.fire()
        self.due += self.interval_s + self.controller.rng.uniform(0.0, MAX_ADV_DELAY_S)
        self.due = max(self.due, loop.time())
        self.handle = loop.call_at(self.due, self._tick)

    def stop(self) -> None:
        if self.handle is not None:
            self.handle.cancel()
            self.handle = None


class VirtualLegacyAdvertiser(bumble_controller.LegacyAdvertiser):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.schedule = _Schedule(self.controller, self.send_advertising_data)  # type: ignore[arg-type]

    def start(self) -> None:
        if self.enabled:
            return  # enabling an enabled advertiser is not an error and changes nothing
        self.enabled = True
        self.schedule.start(self.advertising_interval_min, self.advertising_interval_max)

    def stop(self) -> None:
        self.schedule.stop()
        self.enabled = False

    def send_advertising_data(self) -> None:
        if not self.enabled:
            return
        kind = self.advertising_type
        if kind in (ADV_IND, ADV_SCAN_IND, ADV_NONCONN_IND):
            self.controller.send_advertising_pdu(
                LegacyAdvPdu(
                    pdu_type=kind,
                    advertiser_address=self.address,
                    data=bytes(self.advertising_data),
                    scan_response_data=bytes(self.scan_response_data),
                )
            )
        else:
            # Directed advertising needs a connection simulation this harness lacks.
            self.controller.stats["directed_not_simulated"] += 1


class VirtualAdvertisingSet(bumble_controller.AdvertisingSet):
    LEGACY = 1 << 4

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.schedule = _Schedule(self.controller, self.send_extended_advertising_data)  # type: ignore[arg-type]

    def start(self) -> None:
        if self.enabled:
            return
        self.enabled = True
        params = self.parameters
        lo = params.primary_advertising_interval_min if params else DEFAULT_ADV_INTERVAL_UNITS
        hi = params.primary_advertising_interval_max if params else DEFAULT_ADV_INTERVAL_UNITS
        self.schedule.start(lo, hi)

    def stop(self) -> None:
        self.schedule.stop()
        self.enabled = False

    def send_extended_advertising_data(self) -> None:
        if not self.enabled or not self.parameters or self.address is None:
            return
        props = int(self.parameters.advertising_event_properties)
        if props & self.LEGACY:
            legacy_type = {0b10011: ADV_IND, 0b10010: ADV_SCAN_IND, 0b10000: ADV_NONCONN_IND}
            kind = legacy_type.get(props & 0b11111)
            if kind is None:
                self.controller.stats["directed_not_simulated"] += 1  # type: ignore[attr-defined]
                return
            pdu: ll.AdvertisingPdu = LegacyAdvPdu(
                pdu_type=kind,
                advertiser_address=self.address,
                data=bytes(self.data),
                scan_response_data=bytes(self.scan_response_data),
            )
        else:
            pdu = ExtAdvPdu(
                advertiser_address=self.address,
                data=bytes(self.data),
                sid=self.parameters.advertising_sid,
                tx_power=self.controller.tx_power,  # type: ignore[attr-defined]
                properties=props,
            )
        self.controller.send_advertising_pdu(pdu)


# -----------------------------------------------------------------------------
# Controller
# -----------------------------------------------------------------------------
EXTRA_SUPPORTED_COMMANDS = {
    # Implemented by the stock controller but missing from its Supported Commands.
    hci.HCI_LE_SET_ADVERTISING_SET_RANDOM_ADDRESS_COMMAND,
    hci.HCI_LE_SET_EXTENDED_ADVERTISING_PARAMETERS_COMMAND,
    hci.HCI_LE_SET_EXTENDED_ADVERTISING_DATA_COMMAND,
    hci.HCI_LE_SET_EXTENDED_SCAN_RESPONSE_DATA_COMMAND,
    hci.HCI_LE_SET_EXTENDED_ADVERTISING_ENABLE_COMMAND,
    hci.HCI_LE_READ_MAXIMUM_ADVERTISING_DATA_LENGTH_COMMAND,
    hci.HCI_LE_READ_NUMBER_OF_SUPPORTED_ADVERTISING_SETS_COMMAND,
    hci.HCI_LE_REMOVE_ADVERTISING_SET_COMMAND,
    hci.HCI_LE_CLEAR_ADVERTISING_SETS_COMMAND,
    hci.HCI_LE_SET_EXTENDED_SCAN_PARAMETERS_COMMAND,
    hci.HCI_LE_SET_EXTENDED_SCAN_ENABLE_COMMAND,
}


class VirtualController(bumble_controller.Controller):
    def __init__(self, config: DeviceConfig, radio: RadioLink, seed: int) -> None:
        super().__init__(
            config.name,
            link=radio,
            public_address=config.public_address or _default_public_address(config.name),
        )
        self.config = config
        if config.company_identifier is not None:
            self.manufacturer_company_identifier = config.company_identifier
        if config.hci_version is not None:
            self.hci_version = config.hci_version
        if config.lmp_version is not None:
            self.lmp_version = config.lmp_version
        self.position = config.position
        self.tx_power = config.tx_power
        self.sensitivity = config.sensitivity
        self.rng = random.Random(f"controller:{seed}:{config.name}")
        self.stats: Counter[str] = Counter()
        # The loop-clock times of the last advertising events, as scheduled (`adv_times`).
        self.adv_times: deque[float] = deque(maxlen=2000)
        self.supported_commands = set(bumble_controller.Controller.supported_commands)
        self.supported_commands |= EXTRA_SUPPORTED_COMMANDS
        self.port: HostPort | None = None
        # Faults armed from the control channel, consumed by the next matching command.
        self.command_faults: list[dict[str, Any]] = []
        self.hung = False  # swallow every command and event until the host reconnects
        self.scan_stalled = False  # scanning silently delivers nothing (until re-enabled)
        self._reset_state()

    # -- state ----------------------------------------------------------------
    def _reset_state(self) -> None:
        """Power-up state; what HCI Reset returns the controller to."""
        if getattr(self, "le_legacy_advertiser", None) is not None:
            self.le_legacy_advertiser.stop()
        self.le_legacy_advertiser = VirtualLegacyAdvertiser(self)
        for adv_set in self.advertising_sets.values():
            adv_set.stop()
        self.advertising_sets.clear()
        self._stop_scan_timer()
        self.le_scan_enable = False
        self.scan_uses_extended = False
        self.le_scan_type = 0
        self.le_scan_interval = DEFAULT_SCAN_INTERVAL_UNITS
        self.le_scan_window = DEFAULT_SCAN_WINDOW_UNITS
        self.filter_duplicates = False
        self.scan_started_at = 0.0
        self.duplicates_seen: set[tuple[bytes, int, int]] = set()
        self.scan_stalled = False
        self.event_mask = DEFAULT_EVENT_MASK
        self.event_mask_page_2 = 0
        self.le_event_mask = DEFAULT_LE_EVENT_MASK
        self._random_address = hci.Address("00:00:00:00:00:00")
        self.pending_le_connection = None

    def _stop_scan_timer(self) -> None:
        handle = getattr(self, "scan_timeout_handle", None)
        if handle is not None:
            handle.cancel()
        self.scan_timeout_handle: asyncio.TimerHandle | None = None

    def describe(self) -> dict[str, Any]:
        adv = self.le_legacy_advertiser
        return {
            "name": self.name,
            "public_address": self.public_address.to_string(False),
            "random_address": self.random_address.to_string(False),
            "company_identifier": self.manufacturer_company_identifier,
            "hci_version": self.hci_version,
            "hci_subversion": self.hci_revision,
            "lmp_version": self.lmp_version,
            "lmp_subversion": self.lmp_subversion,
            "position": list(self.position),
            "tx_power": self.tx_power,
            "sensitivity": self.sensitivity,
            "host_connected": bool(self.port and self.port.connected),
            "advertising": self.is_advertising,
            "legacy_advertising": {
                "enabled": adv.enabled,
                "type": LEGACY_PDU_NAMES.get(adv.advertising_type, adv.advertising_type),
                "interval_ms": round(adv.schedule.interval_s * 1000, 3),
                "data": bytes(adv.advertising_data).hex(),
            },
            "advertising_sets": sorted(h for h, s in self.advertising_sets.items() if s.enabled),
            "scanning": self.le_scan_enable,
            "scan": {
                "extended": self.scan_uses_extended,
                "active": self.le_scan_type == 1,
                "interval_ms": self.le_scan_interval * 0.625,
                "window_ms": self.le_scan_window * 0.625,
                "filter_duplicates": self.filter_duplicates,
                "stalled": self.scan_stalled,
            },
            "event_mask": f"{self.event_mask:016x}",
            "le_event_mask": f"{self.le_event_mask:016x}",
            "armed_faults": list(self.command_faults),
            "hung": self.hung,
        }

    # -- host side --------------------------------------------------------------
    def on_host_connected(self) -> None:
        self.hung = False
        self.stats["host_connections"] += 1

    def on_host_disconnected(self, keep_state: bool | None = None) -> None:
        self.hung = False
        if keep_state is None:
            keep_state = self.config.keep_state_on_disconnect
        if not keep_state:
            self._reset_state()

    def on_packet(self, packet: bytes) -> None:
        self.stats["host_packets"] += 1
        try:
            parsed = hci.HCI_Packet.from_bytes(packet)
        except Exception as error:  # malformed parameters: answer, never go silent
            self.stats["malformed_commands"] += 1
            log.warning("[%s] malformed packet %s: %s", self.name, packet.hex(), error)
            if len(packet) >= 3 and packet[0] == hci.HCI_COMMAND_PACKET:
                opcode = int.from_bytes(packet[1:3], "little")
                self.emit(command_complete(opcode, INVALID_HCI_COMMAND_PARAMETERS))
            return
        self.on_hci_packet(parsed)

    def on_hci_command_packet(self, command: hci.HCI_Command) -> None:
        self.stats["commands"] += 1
        if self.hung:
            self.stats["commands_swallowed"] += 1
            return
        fault = self._take_fault(command.op_code)
        if fault is not None:
            self.stats[f"fault_{fault['fault']}"] += 1
            log.info("[%s] fault %s on %s", self.name, fault["fault"], command.name)
            if fault["fault"] == "no_reply":
                if fault.get("execute"):
                    self._run_handler(command, reply=False)
                return
            if fault["fault"] == "disallow":
                self._reply_error(command, COMMAND_DISALLOWED)
                return
        self._run_handler(command, reply=True)

    def _take_fault(self, opcode: int) -> dict[str, Any] | None:
        for i, fault in enumerate(self.command_faults):
            if fault.get("opcode") in (None, opcode):
                return self.command_faults.pop(i)
        return None

    def _run_handler(self, command: hci.HCI_Command, reply: bool) -> None:
        handler = getattr(self, f"on_{command.name.lower()}", None)
        if handler is None:
            self.stats["unknown_commands"] += 1
            log.info("[%s] unknown command %s", self.name, command.name)
            if reply:
                self._reply_error(command, UNKNOWN_HCI_COMMAND)
            return
        try:
            result = handler(command)
        except Exception:
            log.exception("[%s] handler for %s failed", self.name, command.name)
            if reply:
                self._reply_error(command, INVALID_HCI_COMMAND_PARAMETERS)
            return
        if not reply:
            return
        if isinstance(command, hci.HCI_SyncCommand):
            if result is None:
                self._reply_error(command, HARDWARE_FAILURE)
                return
            self.send_hci_packet(
                hci.HCI_Command_Complete_Event(
                    num_hci_command_packets=1,
                    command_opcode=command.op_code,
                    return_parameters=result,
                )
            )
        elif result is not None:
            # Async handlers report their own Command Status; a returned status is an
            # early error that must still be answered.
            self._reply_error(command, int(getattr(result, "status", HARDWARE_FAILURE)))

    def _reply_error(self, command: hci.HCI_Command, status: int) -> None:
        if isinstance(command, hci.HCI_AsyncCommand):
            self.emit(command_status(command.op_code, status))
        else:
            self.emit(command_complete(command.op_code, status))

    def send_hci_packet(self, packet: hci.HCI_Packet) -> None:
        self.emit(bytes(packet))

    def emit(self, raw: bytes, force: bool = False) -> None:
        """Send H4 bytes to the host, honouring the event masks unless forced."""
        if self.hung and not force:
            self.stats["events_swallowed"] += 1
            return
        if not force and raw[:1] == b"\x04" and len(raw) >= 2 and self._masked(raw):
            self.stats["events_masked"] += 1
            return
        if self.port is None or not self.port.connected:
            self.stats["events_without_host"] += 1
            return
        self.stats["events"] += 1
        asyncio.get_running_loop().call_soon(self.port.write, raw)

    def _masked(self, raw: bytes) -> bool:
        code = raw[1]
        if code in NOT_MASKABLE_EVENTS or not 1 <= code <= 64:
            return False
        if not self.event_mask & (1 << (code - 1)):
            return True
        if code == EVENT_CODE_LE_META and len(raw) >= 4:
            subevent = raw[3]
            return 1 <= subevent <= 64 and not self.le_event_mask & (1 << (subevent - 1))
        return False

    # -- commands whose stock handling is wrong ---------------------------------
    def on_hci_reset_command(self, _command):
        self._reset_state()
        return hci.HCI_StatusReturnParameters(hci.HCI_ErrorCode.SUCCESS)

    def on_hci_le_set_random_address_command(self, command):
        # Vol 4, Part E, 7.8.4: disallowed while legacy advertising or scanning is on.
        if self.le_legacy_advertiser.enabled or self.le_scan_enable:
            self.stats["random_address_refused"] += 1
            return hci.HCI_StatusReturnParameters(COMMAND_DISALLOWED)
        self.stats["random_address_set"] += 1
        return super().on_hci_le_set_random_address_command(command)

    def on_hci_le_set_advertising_parameters_command(self, command):
        if self.le_legacy_advertiser.enabled:
            return hci.HCI_StatusReturnParameters(COMMAND_DISALLOWED)
        lo, hi = command.advertising_interval_min, command.advertising_interval_max
        directed_high_duty = command.advertising_type == 0x01
        if not directed_high_duty and not (0x0020 <= lo <= hi <= 0x4000):
            return hci.HCI_StatusReturnParameters(INVALID_HCI_COMMAND_PARAMETERS)
        if command.advertising_type > 0x04 or command.own_address_type > 0x03:
            return hci.HCI_StatusReturnParameters(INVALID_HCI_COMMAND_PARAMETERS)
        if not 0 < command.advertising_channel_map <= 0x07:
            return hci.HCI_StatusReturnParameters(INVALID_HCI_COMMAND_PARAMETERS)
        return super().on_hci_le_set_advertising_parameters_command(command)

    def on_hci_le_set_advertising_enable_command(self, command):
        adv = self.le_legacy_advertiser
        if command.advertising_enable:
            if adv.own_address_type in (1, 3) and bytes(self.random_address) == bytes(6):
                # 7.8.9: random own address requested but none set.
                return hci.HCI_StatusReturnParameters(INVALID_HCI_COMMAND_PARAMETERS)
            adv.start()
        else:
            adv.stop()
        return hci.HCI_StatusReturnParameters(hci.HCI_ErrorCode.SUCCESS)

    def on_hci_le_read_advertising_physical_channel_tx_power_command(self, _command):
        return hci.HCI_LE_Read_Advertising_Physical_Channel_Tx_Power_ReturnParameters(
            status=hci.HCI_ErrorCode.SUCCESS, tx_power_level=_clamp(self.tx_power, -127, 20)
        )

    def on_hci_le_read_transmit_power_command(self, _command):
        # Min_TX_Power and Max_TX_Power are signed octets (Core 7.8.74, -127...20 dBm), but
        # Bumble declares them unsigned and raises ValueError for a negative power: the command
        # went unanswered and the kernel's controller setup waited on it. The octet's two's
        # complement is what the host reads back as the signed power.
        octet = _clamp(self.tx_power, -127, 20) & 0xFF
        return hci.HCI_LE_Read_Transmit_Power_ReturnParameters(
            status=hci.HCI_ErrorCode.SUCCESS, min_tx_power=octet, max_tx_power=octet
        )

    def _advertising_set(self, handle: int) -> VirtualAdvertisingSet:
        adv_set = self.advertising_sets.get(handle)
        if adv_set is None:
            adv_set = VirtualAdvertisingSet(controller=self, handle=handle)
            self.advertising_sets[handle] = adv_set
        return adv_set  # type: ignore[return-value]

    def on_hci_le_set_advertising_set_random_address_command(self, command):
        self._advertising_set(command.advertising_handle).random_address = command.random_address
        return hci.HCI_StatusReturnParameters(hci.HCI_ErrorCode.SUCCESS)

    def on_hci_le_set_extended_advertising_parameters_command(self, command):
        adv_set = self._advertising_set(command.advertising_handle)
        if adv_set.enabled:
            return hci.HCI_StatusReturnParameters(COMMAND_DISALLOWED)
        adv_set.parameters = command
        return hci.HCI_LE_Set_Extended_Advertising_Parameters_ReturnParameters(
            status=hci.HCI_ErrorCode.SUCCESS, selected_tx_power=_clamp(self.tx_power, -127, 20)
        )

    def on_hci_le_set_scan_parameters_command(self, command):
        if self.le_scan_enable:
            return hci.HCI_StatusReturnParameters(COMMAND_DISALLOWED)
        if not (0x0004 <= command.le_scan_window <= command.le_scan_interval <= 0x4000):
            return hci.HCI_StatusReturnParameters(INVALID_HCI_COMMAND_PARAMETERS)
        if command.le_scan_type > 1:
            return hci.HCI_StatusReturnParameters(INVALID_HCI_COMMAND_PARAMETERS)
        return super().on_hci_le_set_scan_parameters_command(command)

    def on_hci_le_set_extended_scan_parameters_command(self, command):
        if self.le_scan_enable:
            return hci.HCI_StatusReturnParameters(COMMAND_DISALLOWED)
        if not command.scanning_phys & 0x01 or not command.scan_intervals:
            # Only the 1M PHY is simulated; it must be among the scanned PHYs.
            return hci.HCI_StatusReturnParameters(INVALID_HCI_COMMAND_PARAMETERS)
        interval, window = command.scan_intervals[0], command.scan_windows[0]
        if not 0x0004 <= window <= interval:
            return hci.HCI_StatusReturnParameters(INVALID_HCI_COMMAND_PARAMETERS)
        self.le_scan_type = command.scan_types[0]
        self.le_scan_interval = interval
        self.le_scan_window = window
        return super().on_hci_le_set_extended_scan_parameters_command(command)

    def on_hci_le_set_scan_enable_command(self, command):
        return self._set_scan(bool(command.le_scan_enable), bool(command.filter_duplicates),
                              extended=False)

    def on_hci_le_set_extended_scan_enable_command(self, command):
        status = self._set_scan(bool(command.enable), bool(command.filter_duplicates),
                                extended=True)
        if command.enable and status.status == SUCCESS and command.duration:
            # Duration in 10 ms units; at its end the LE Scan Timeout event (7.7.65.17).
            self.scan_timeout_handle = asyncio.get_running_loop().call_later(
                command.duration * 0.010, self._on_scan_duration_over
            )
        return status

    def _set_scan(self, enable: bool, filter_duplicates: bool, extended: bool):
        if not enable:
            if not self.le_scan_enable and self.config.quirk_disallow_redundant_scan_disable:
                return hci.HCI_StatusReturnParameters(COMMAND_DISALLOWED)
            self.le_scan_enable = False
            self._stop_scan_timer()
            return hci.HCI_StatusReturnParameters(hci.HCI_ErrorCode.SUCCESS)
        if self.le_scan_enable:
            # Already scanning: only the duplicate filter setting changes (7.8.11).
            self.filter_duplicates = filter_duplicates
            return hci.HCI_StatusReturnParameters(hci.HCI_ErrorCode.SUCCESS)
        self.le_scan_enable = True
        self.scan_uses_extended = extended
        self.filter_duplicates = filter_duplicates
        self.duplicates_seen.clear()
        self.scan_stalled = False
        self.scan_started_at = asyncio.get_running_loop().time()
        return hci.HCI_StatusReturnParameters(hci.HCI_ErrorCode.SUCCESS)

    def _on_scan_duration_over(self) -> None:
        self.scan_timeout_handle = None
        self.le_scan_enable = False
        self.emit(bytes([0x04, EVENT_CODE_LE_META, 0x01, SUBEVENT_SCAN_TIMEOUT]))

    # -- receiving ---------------------------------------------------------------
    def on_radio_pdu(self, pdu: ll.AdvertisingPdu, rssi_dbm: float) -> None:
        rssi = _clamp(round(rssi_dbm), -127, 20)
        if isinstance(pdu, LegacyAdvPdu) and pdu.pdu_type == ADV_IND:
            pending = self.pending_le_connection
            if pending is not None and pending.peer_address == pdu.advertiser_address:
                self.create_le_connection(pdu.advertiser_address)
        if not self.le_scan_enable or self.hung:
            self.stats["pdus_not_scanning"] += 1
            return
        if self.scan_stalled:
            self.stats["pdus_scan_stalled"] += 1
            return
        interval_s = self.le_scan_interval * UNIT_S
        window_s = self.le_scan_window * UNIT_S
        if window_s < interval_s:
            phase = (asyncio.get_running_loop().time() - self.scan_started_at) % interval_s
            if phase >= window_s:
                self.stats["pdus_outside_scan_window"] += 1
                return
        if isinstance(pdu, LegacyAdvPdu):
            self._report_legacy(pdu, rssi)
        elif isinstance(pdu, ll.AdvExtInd):
            if not self.scan_uses_extended:
                # A legacy scan does not follow AUX pointers: extended PDUs are invisible.
                self.stats["pdus_not_visible_to_legacy_scan"] += 1
                return
            self._report_extended(pdu, rssi)

    def _is_duplicate(self, address: hci.Address, event_type: int) -> bool:
        if not self.filter_duplicates:
            return False
        key = (bytes(address), address.address_type, event_type)
        if key in self.duplicates_seen:
            self.stats["reports_filtered_duplicates"] += 1
            return True
        self.duplicates_seen.add(key)
        return False

    def _report_legacy(self, pdu: LegacyAdvPdu, rssi: int) -> None:
        address = pdu.advertiser_address
        scannable = pdu.pdu_type in (ADV_IND, ADV_SCAN_IND)
        active = self.le_scan_type == 1
        if self._is_duplicate(address, pdu.pdu_type):
            return
        self.stats["pdus_received"] += 1
        if self.scan_uses_extended:
            self._send_extended_reports(EXT_EVENT_TYPE_FOR_LEGACY[pdu.pdu_type], address,
                                        pdu.data, rssi, sid=0xFF, tx_power=0x7F,
                                        secondary_phy=0)
            if active and scannable:
                scan_rsp_type = (EXT_SCAN_RSP_TO_ADV_IND if pdu.pdu_type == ADV_IND
                                 else EXT_SCAN_RSP_TO_ADV_SCAN_IND)
                self._send_extended_reports(scan_rsp_type, address, pdu.scan_response_data,
                                            rssi, sid=0xFF, tx_power=0x7F, secondary_phy=0)
            return
        self._send_legacy_report(pdu.pdu_type, address, pdu.data, rssi)
        if active and scannable:
            self._send_legacy_report(SCAN_RSP, address, pdu.scan_response_data, rssi)

    def _send_legacy_report(self, event_type: int, address: hci.Address, data: bytes,
                            rssi: int) -> None:
        report = hci.HCI_LE_Advertising_Report_Event.Report(
            event_type=event_type,
            address_type=address.address_type,
            address=address,
            data=data,
            rssi=rssi,
        )
        self.stats["reports"] += 1
        self.send_hci_packet(hci.HCI_LE_Advertising_Report_Event([report]))

    def _report_extended(self, pdu: ll.AdvExtInd, rssi: int) -> None:
        props = getattr(pdu, "properties", 0) & 0b111  # connectable, scannable, directed
        if self._is_duplicate(pdu.advertiser_address, props):
            return
        self.stats["pdus_received"] += 1
        tx_power = pdu.tx_power if pdu.tx_power is not None else 0x7F
        self._send_extended_reports(props, pdu.advertiser_address, pdu.data, rssi,
                                    sid=pdu.sid, tx_power=tx_power, secondary_phy=1)

    def _send_extended_reports(self, event_type: int, address: hci.Address, data: bytes,
                               rssi: int, sid: int, tx_power: int, secondary_phy: int) -> None:
        # Data longer than one event holds goes in fragments marked "more to come".
        chunks = [data[i:i + EXT_REPORT_MAX_DATA]
                  for i in range(0, len(data), EXT_REPORT_MAX_DATA)] or [b""]
        for index, chunk in enumerate(chunks):
            status = 0b01 if index < len(chunks) - 1 else 0b00
            report = hci.HCI_LE_Extended_Advertising_Report_Event.Report(
                event_type=event_type | (status << 5),
                address_type=address.address_type,
                address=address,
                primary_phy=hci.Phy.LE_1M,
                secondary_phy=secondary_phy,
                advertising_sid=sid,
                tx_power=tx_power & 0xFF,
                rssi=rssi,
                periodic_advertising_interval=0,
                direct_address_type=0,
                direct_address=hci.Address.ANY,
                data=chunk,
            )
            self.stats["reports"] += 1
            self.send_hci_packet(hci.HCI_LE_Extended_Advertising_Report_Event([report]))

    # -- faults -----------------------------------------------------------------------
    # -- report flood (control command "flood") -------------------------------------
    def start_flood(self, rate: float, seconds: float, rssi: int = -60) -> None:
        """Delivers `rate` GAEN reports a second (distinct RPIs and addresses) to the host
        for `seconds`, while it scans: a crowd, without simulating every advertiser. Reports
        go out every 10 ms, six to an event (what fits in 255 bytes); counted in
        stats["flood_reports"] (delivered) and stats["flood_not_scanning"]."""
        self.stop_flood()
        loop = asyncio.get_running_loop()
        end = loop.time() + seconds
        state = {"owed": 0.0, "last": loop.time()}

        def tick() -> None:
            now = loop.time()
            if now >= end:
                self.flood_handle = None
                return
            state["owed"] += rate * (now - state["last"])
            state["last"] = now
            n = int(state["owed"])
            state["owed"] -= n
            if n:
                if not self.le_scan_enable or self.hung:
                    self.stats["flood_not_scanning"] += n
                else:
                    self._flood_reports(n, rssi)
            self.flood_handle = loop.call_later(0.010, tick)

        self.flood_handle = loop.call_later(0.010, tick)

    def stop_flood(self) -> None:
        handle = getattr(self, "flood_handle", None)
        if handle is not None:
            handle.cancel()
        self.flood_handle = None

    def _flood_reports(self, n: int, rssi: int) -> None:
        rng = self.rng
        while n > 0:
            batch = min(n, 6 if not self.scan_uses_extended else 4)
            n -= batch
            body = bytearray()
            for _ in range(batch):
                address = bytes(rng.getrandbits(8) for _ in range(5)) + bytes([0x40 | rng.getrandbits(6)])
                payload = (bytes([0x02, 0x01, 0x1A, 0x03, 0x03, 0x6F, 0xFD, 0x17, 0x16, 0x6F, 0xFD])
                           + rng.randbytes(20))  # RPI (16) + AEM (4)
                if self.scan_uses_extended:
                    body += (struct.pack("<HB", 0x0010 | 0x0000, 1) + address + bytes([1, 0, 0xFF, 0x7F, rssi & 0xFF])
                             + struct.pack("<H", 0) + bytes([0]) + bytes(6) + bytes([len(payload)]) + payload)
                else:
                    body += bytes([0x03, 1]) + address + bytes([len(payload)]) + payload + bytes([rssi & 0xFF])
            sub = 0x0D if self.scan_uses_extended else 0x02
            params = bytes([sub, batch]) + bytes(body)
            self.stats["flood_reports"] += batch
            self.emit(bytes([0x04, EVENT_CODE_LE_META, len(params)]) + params)

    def inject_hardware_error(self, code: int, force: bool) -> None:
        self.emit(bytes([0x04, 0x10, 0x01, code & 0xFF]), force=force)

    def inject_raw(self, raw: bytes) -> None:
        """Bytes straight onto the host stream: no mask, no framing check."""
        if self.port is None or not self.port.connected:
            raise RuntimeError(f"no host connected to {self.name}")
        self.stats["injected_bytes"] += len(raw)
        self.port.write(raw)


def command_complete(opcode: int, status: int) -> bytes:
    return bytes([0x04, 0x0E, 0x04, 0x01]) + opcode.to_bytes(2, "little") + bytes([status])


def command_status(opcode: int, status: int) -> bytes:
    return bytes([0x04, 0x0F, 0x04, status, 0x01]) + opcode.to_bytes(2, "little")


def _clamp(value: int, low: int, high: int) -> int:
    return max(low, min(high, int(value)))


def _default_public_address(name: str) -> str:
    # Stable per name so that hosts see the same controller address across runs.
    digest = random.Random(f"public:{name}").getrandbits(40)
    return ":".join(f"{b:02X}" for b in (b"\x00" + digest.to_bytes(5, "big")))


# -----------------------------------------------------------------------------
# Host ports: one H4 byte stream per controller
# -----------------------------------------------------------------------------
class HostPort:
    """Serves one controller to one host at a time. A fresh H4 framer per connection."""

    kind = ""

    def __init__(self, controller: VirtualController) -> None:
        self.controller = controller
        controller.port = self
        self.parser: PacketParser | None = None
        self.refusing_until = 0.0

    @property
    def connected(self) -> bool:
        raise NotImplementedError

    def write(self, raw: bytes) -> None:
        raise NotImplementedError

    async def start(self) -> None:
        raise NotImplementedError

    async def drop(self, keep_state: bool, refuse_seconds: float) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError

    def describe(self) -> dict[str, str]:
        raise NotImplementedError

    def _feed(self, data: bytes) -> bool:
        """Feeds host bytes to the framer; False when the stream is out of sync."""
        assert self.parser is not None
        try:
            self.parser.feed_data(data)
            return True
        except InvalidPacketError as error:
            self.controller.stats["host_framing_errors"] += 1
            log.warning("[%s] bad H4 stream from host (%s): closing", self.controller.name, error)
            return False


class StreamServerPort(HostPort):
    """tcp-server:HOST:PORT or unix-server:PATH."""

    def __init__(self, controller: VirtualController, kind: str, address: str) -> None:
        super().__init__(controller)
        self.kind = kind
        self.address = address
        self.server: asyncio.AbstractServer | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.host = ""
        self.port = 0
        self.session: asyncio.Task | None = None
        self.dropping_keep_state: bool | None = None
        if kind == "tcp-server":
            self.host, port = address.rsplit(":", 1)
            self.port = int(port)

    @property
    def connected(self) -> bool:
        return self.writer is not None

    async def start(self) -> None:
        if self.kind == "tcp-server":
            self.server = await asyncio.start_server(self._serve, self.host, self.port)
            self.port = self.server.sockets[0].getsockname()[1]  # port 0 -> the real one
        else:
            if os.path.exists(self.address):
                os.unlink(self.address)
            self.server = await asyncio.start_unix_server(self._serve, self.address)

    def describe(self) -> dict[str, str]:
        if self.kind == "tcp-server":
            return {
                "transport": f"tcp-server:{self.host}:{self.port}",
                "connect": f"tcp:{self.host}:{self.port}",
                "bumble": f"tcp-client:{self.host}:{self.port}",
            }
        return {
            "transport": f"unix-server:{self.address}",
            "connect": f"unix:{self.address}",
            "bumble": f"unix:{self.address}",
        }

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        name = self.controller.name
        if self.writer is not None:
            # One host per controller, like a UART; a second host is turned away.
            log.warning("[%s] second host connection refused", name)
            self.controller.stats["host_connections_refused"] += 1
            writer.close()
            return
        self.writer = writer
        self.parser = PacketParser(self.controller)
        self.controller.on_host_connected()
        self.session = asyncio.current_task()
        log.info("[%s] host connected", name)
        keep_state = None
        try:
            while True:
                data = await reader.read(65536)
                if not data or not self._feed(data):
                    break
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            keep_state = self.dropping_keep_state
            self.dropping_keep_state = None
            self.writer = None
            self.parser = None
            self.session = None
            writer.close()
            self.controller.on_host_disconnected(keep_state)
            log.info("[%s] host disconnected", name)

    def write(self, raw: bytes) -> None:
        if self.writer is not None and not self.writer.is_closing():
            self.writer.write(raw)

    async def drop(self, keep_state: bool, refuse_seconds: float) -> None:
        session, writer = self.session, self.writer
        if writer is not None:
            self.dropping_keep_state = keep_state
            # Abort, not a graceful close: the host sees the link vanish at once.
            transport = writer.transport
            if hasattr(transport, "abort"):
                transport.abort()
            else:
                writer.close()
        if session is not None:
            await asyncio.wait({session}, timeout=2)
        if refuse_seconds > 0:
            await self._stop_listening()
            asyncio.get_running_loop().call_later(
                refuse_seconds, lambda: asyncio.ensure_future(self.start())
            )

    async def _stop_listening(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()
            self.server = None
        if self.kind == "unix-server" and os.path.exists(self.address):
            os.unlink(self.address)

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        if self.server is not None:
            self.server.close()
        if self.kind == "unix-server" and os.path.exists(self.address):
            os.unlink(self.address)


class PtyPort(HostPort):
    """pty:PATH — a pseudo-terminal behaves like a UART; PATH links to its replica."""

    kind = "pty"

    def __init__(self, controller: VirtualController, path: str) -> None:
        super().__init__(controller)
        self.path = path
        self.primary = -1
        self.replica = -1

    @property
    def connected(self) -> bool:
        return self.primary >= 0  # a UART has no notion of a host being there

    async def start(self) -> None:
        self.primary, self.replica = pty.openpty()
        tty.setraw(self.primary)
        tty.setraw(self.replica)
        os.set_blocking(self.primary, False)
        if os.path.lexists(self.path):
            os.unlink(self.path)
        os.symlink(os.ttyname(self.replica), self.path)
        self.parser = PacketParser(self.controller)
        asyncio.get_running_loop().add_reader(self.primary, self._readable)
        self.controller.on_host_connected()

    def _readable(self) -> None:
        try:
            data = os.read(self.primary, 65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data and not self._feed(data):
            self.parser = PacketParser(self.controller)  # resynchronise on the next byte

    def write(self, raw: bytes) -> None:
        if self.primary < 0:
            return
        try:
            os.write(self.primary, raw)
        except BlockingIOError:
            self.controller.stats["pty_bytes_dropped"] += len(raw)

    def describe(self) -> dict[str, str]:
        return {"transport": f"pty:{self.path}", "connect": f"serial:{self.path}",
                "bumble": f"serial:{self.path}"}

    async def drop(self, keep_state: bool, refuse_seconds: float) -> None:
        # A pty cannot be "unplugged" for one side only: close it and make a new one.
        self._close_fds()
        self.controller.on_host_disconnected(keep_state)
        if refuse_seconds > 0:
            await asyncio.sleep(refuse_seconds)
        await self.start()

    def _close_fds(self) -> None:
        if self.primary >= 0:
            asyncio.get_running_loop().remove_reader(self.primary)
            os.close(self.primary)
            os.close(self.replica)
        self.primary = self.replica = -1

    async def close(self) -> None:
        self._close_fds()
        if os.path.lexists(self.path):
            os.unlink(self.path)


def make_port(controller: VirtualController, spec: str) -> HostPort:
    kind, _, rest = spec.partition(":")
    if kind == "tcp-server" and ":" in rest:
        return StreamServerPort(controller, kind, rest)
    if kind == "unix-server" and rest:
        return StreamServerPort(controller, kind, rest)
    if kind == "pty" and rest:
        return PtyPort(controller, rest)
    raise ValueError(
        f"transport {spec!r}: expected tcp-server:HOST:PORT, unix-server:PATH or pty:PATH"
    )


# -----------------------------------------------------------------------------
# The radio: devices, link, control channel
# -----------------------------------------------------------------------------
class ControlError(Exception):
    pass


class VirtualRadio:
    def __init__(self, channel: ChannelModel, seed: int) -> None:
        self.channel = channel
        self.seed = seed
        self.link = RadioLink(channel, seed)
        self.devices: dict[str, VirtualController] = {}
        self.ports: dict[str, HostPort] = {}
        self.control_server: asyncio.AbstractServer | None = None
        self.control_address = ""
        self.stopped = asyncio.Event()
        self.initial_channel = dataclasses.replace(channel)

    async def add_device(self, config: DeviceConfig) -> None:
        if config.name in self.devices:
            raise ValueError(f"duplicate device name {config.name!r}")
        controller = VirtualController(config, self.link, self.seed)
        port = make_port(controller, config.transport)
        await port.start()
        self.devices[config.name] = controller
        self.ports[config.name] = port

    async def start_control(self, spec: str) -> None:
        kind, _, rest = spec.partition(":")
        if kind == "unix" and rest:
            if os.path.exists(rest):
                os.unlink(rest)
            self.control_server = await asyncio.start_unix_server(self._serve_control, rest)
            self.control_address = f"unix:{rest}"
        elif kind == "tcp" and ":" in rest:
            host, port = rest.rsplit(":", 1)
            if host not in ("127.0.0.1", "localhost", "::1"):
                raise ValueError("the control channel listens on the loopback address only")
            self.control_server = await asyncio.start_server(self._serve_control, host, int(port))
            real_port = self.control_server.sockets[0].getsockname()[1]
            self.control_address = f"tcp:{host}:{real_port}"
        else:
            raise ValueError(f"control {spec!r}: expected unix:PATH or tcp:127.0.0.1:PORT")

    def ready_line(self) -> dict[str, Any]:
        return {
            "ready": True,
            "pid": os.getpid(),
            "control": self.control_address or None,
            "devices": {
                name: {**self.ports[name].describe(),
                       "public_address": dev.public_address.to_string(False),
                       "position": list(dev.position), "tx_power": dev.tx_power}
                for name, dev in self.devices.items()
            },
            "channel": dataclasses.asdict(self.channel),
            "seed": self.seed,
        }

    async def _serve_control(self, reader: asyncio.StreamReader,
                             writer: asyncio.StreamWriter) -> None:
        try:
            while line := await reader.readline():
                if not line.strip():
                    continue
                reply = await self.handle_control_line(line)
                writer.write(json.dumps(reply).encode() + b"\n")
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            pass  # shutting down: the client sees the connection close
        finally:
            writer.close()

    async def handle_control_line(self, line: bytes) -> dict[str, Any]:
        request_id = None
        try:
            request = json.loads(line)
            if not isinstance(request, dict):
                raise ControlError("a request is a JSON object")
            request_id = request.get("id")
            cmd = request.get("cmd")
            handler = getattr(self, f"control_{cmd}", None) if isinstance(cmd, str) else None
            if handler is None:
                raise ControlError(f"unknown cmd {cmd!r}; try {{\"cmd\":\"help\"}}")
            result = await handler(request)
            reply = {"ok": True, **(result or {})}
        except (ControlError, ValueError, KeyError, TypeError, RuntimeError) as error:
            reply = {"ok": False, "error": f"{type(error).__name__}: {error}"}
        if request_id is not None:
            reply["id"] = request_id
        return reply

    def _device(self, request: dict[str, Any]) -> VirtualController:
        name = request.get("device")
        if name not in self.devices:
            raise ControlError(f"unknown device {name!r}; devices: {sorted(self.devices)}")
        return self.devices[name]

    # Control commands (documented in README.md) -------------------------------------
    async def control_help(self, _request):
        return {"commands": sorted(n[len("control_"):] for n in dir(self)
                                   if n.startswith("control_"))}

    async def control_list(self, _request):
        return {"devices": {name: {**self.ports[name].describe(), **dev.describe()}
                            for name, dev in self.devices.items()}}

    async def control_state(self, request):
        dev = self._device(request)
        return {"state": {**self.ports[dev.name].describe(), **dev.describe()}}

    async def control_move(self, request):
        dev = self._device(request)
        dev.position = _position(request["position"])
        return {"position": list(dev.position)}

    async def control_set(self, request):
        dev = self._device(request)
        if "tx_power" in request:
            dev.tx_power = int(request["tx_power"])
        if "sensitivity" in request:
            dev.sensitivity = float(request["sensitivity"])
        if "position" in request:
            dev.position = _position(request["position"])
        return {"tx_power": dev.tx_power, "sensitivity": dev.sensitivity,
                "position": list(dev.position)}

    async def control_channel(self, request):
        self.channel.update({k: v for k, v in request.items() if k not in ("cmd", "id")})
        return {"channel": dataclasses.asdict(self.channel)}

    async def control_rssi(self, request):
        """Mean RSSI and attenuation from one device to another under the current model."""
        sender = self.devices[request["from"]] if request.get("from") in self.devices else None
        receiver = self.devices[request["to"]] if request.get("to") in self.devices else None
        if sender is None or receiver is None:
            raise ControlError("rssi needs existing 'from' and 'to' devices")
        distance = math.dist(sender.position, receiver.position)
        attenuation = self.channel.mean_attenuation(distance)
        return {"distance": distance, "mean_attenuation": attenuation,
                "mean_rssi": sender.tx_power - attenuation}

    async def control_flood(self, request):
        """{"device", "rate" (reports/s), "seconds"}: GAEN reports delivered to the device's
        host while it scans (VirtualController.start_flood); rate 0 stops a flood."""
        dev = self._device(request)
        rate = float(request.get("rate", 0))
        if rate <= 0:
            dev.stop_flood()
        else:
            dev.start_flood(rate, float(request.get("seconds", 10)), int(request.get("rssi", -60)))
        return {"flood": {"rate": rate}}

    async def control_adv_times(self, request):
        """The device's last advertising events (up to 2,000), as the schedule set them (seconds
        on the radio's monotonic loop clock): the interval and advDelay without the delivery
        delays a loaded host adds to the reports."""
        return {"adv_times": list(self._device(request).adv_times)}

    async def control_stats(self, request):
        if request.get("device") is not None:
            dev = self._device(request)
            return {"stats": {dev.name: dict(dev.stats)}}
        return {"stats": {name: dict(dev.stats) for name, dev in self.devices.items()}}

    async def control_reset_stats(self, request):
        devices = [self._device(request)] if request.get("device") else self.devices.values()
        for dev in devices:
            dev.stats.clear()
            dev.adv_times.clear()
        return {}

    async def control_drop(self, request):
        dev = self._device(request)
        refuse = float(request.get("refuse_seconds", 0))
        await self.ports[dev.name].drop(bool(request.get("keep_state", False)), refuse)
        return {}

    async def control_hardware_error(self, request):
        dev = self._device(request)
        dev.inject_hardware_error(int(request.get("code", 0)), bool(request.get("force", False)))
        return {}

    async def _arm(self, request, fault: str):
        dev = self._device(request)
        opcode = request.get("opcode")
        if isinstance(opcode, str):
            opcode = int(opcode, 16)
        entry = {"fault": fault, "opcode": opcode}
        if fault == "no_reply":
            entry["execute"] = bool(request.get("execute", False))
        for _ in range(int(request.get("count", 1))):
            dev.command_faults.append(dict(entry))
        return {"armed": dev.command_faults}

    async def control_no_reply(self, request):
        return await self._arm(request, "no_reply")

    async def control_disallow(self, request):
        return await self._arm(request, "disallow")

    async def control_clear_faults(self, request):
        dev = self._device(request)
        dev.command_faults.clear()
        dev.hung = False
        dev.scan_stalled = False
        return {}

    async def control_hang(self, request):
        dev = self._device(request)
        dev.hung = True
        return {}

    async def control_stall_scan(self, request):
        dev = self._device(request)
        dev.scan_stalled = True
        return {}

    async def control_inject(self, request):
        dev = self._device(request)
        kind = request.get("kind", "raw")
        raw = garbage(kind, request.get("hex"), dev.rng)
        dev.inject_raw(raw)
        return {"bytes": raw.hex()}

    async def control_restore(self, _request):
        """Back to the configured start: hosts dropped, controllers power-cycled, positions,
        powers and channel as configured, faults and stats cleared. Lets a test suite share
        one harness between tests."""
        for name, dev in self.devices.items():
            await self.ports[name].drop(keep_state=False, refuse_seconds=0)
            dev._reset_state()
            dev.command_faults.clear()
            dev.hung = False
            dev.position = dev.config.position
            dev.tx_power = dev.config.tx_power
            dev.sensitivity = dev.config.sensitivity
            dev.stats.clear()
            dev.adv_times.clear()
        self.channel.update({f.name: getattr(self.initial_channel, f.name)
                             for f in dataclasses.fields(self.channel)})
        return {}

    async def control_shutdown(self, _request):
        asyncio.get_running_loop().call_soon(self.stopped.set)
        return {}

    async def close(self) -> None:
        for dev in self.devices.values():
            dev._reset_state()
        for port in self.ports.values():
            await port.close()
        if self.control_server is not None:
            self.control_server.close()
        if self.control_address.startswith("unix:"):
            path = self.control_address[len("unix:"):]
            if os.path.exists(path):
                os.unlink(path)


def garbage(kind: str, hex_bytes: str | None, rng: random.Random) -> bytes:
    """Bad bytes for the host's framer and decoders."""
    if kind == "raw":
        if not hex_bytes:
            raise ControlError("inject raw needs 'hex'")
        return bytes.fromhex(hex_bytes)
    if kind == "truncated":
        # Well framed, but an LE Advertising Report that claims one report and stops
        # after the address: the decoder must reject it, the framer stays in sync.
        body = bytes([SUBEVENT_ADVERTISING_REPORT, 0x01, ADV_NONCONN_IND, 0x01]) + bytes(6)
        return bytes([0x04, EVENT_CODE_LE_META, len(body)]) + body
    if kind == "truncated_command_complete":
        # Command Complete too short to hold even the opcode.
        return bytes([0x04, 0x0E, 0x02, 0x01, 0x03])
    if kind == "garbled":
        # Well framed event with an unassigned event code and random parameters.
        body = bytes(rng.getrandbits(8) for _ in range(8))
        return bytes([0x04, 0xFE, len(body)]) + body
    if kind == "bad_packet_type":
        # Not an H4 packet indicator at all: the host must resynchronise or reconnect.
        return bytes([0x07, 0x00, 0x00])
    if kind == "short_frame":
        # Header says 10 parameter bytes, only 3 follow: the next packet gets swallowed.
        return bytes([0x04, 0x0E, 0x0A, 0x01, 0x03, 0x0C])
    raise ControlError(
        f"unknown inject kind {kind!r}: raw, truncated, truncated_command_complete, "
        "garbled, bad_packet_type, short_frame"
    )


# -----------------------------------------------------------------------------
# Command line
# -----------------------------------------------------------------------------
def build_config(args: argparse.Namespace) -> tuple[ChannelModel, int, list[DeviceConfig], str | None]:
    channel = ChannelModel()
    seed = 1
    devices: list[DeviceConfig] = []
    control = None
    if args.config:
        with open(args.config, encoding="utf-8") as handle:
            data = json.load(handle)
        channel.update(data.get("channel", {}))
        seed = int(data.get("seed", seed))
        devices += [DeviceConfig.from_dict(d) for d in data.get("devices", [])]
        control = data.get("control")
    if args.preset:
        channel.update({"preset": args.preset})
    for key in ("a1m", "slope", "sigma", "loss"):
        value = getattr(args, key)
        if value is not None:
            channel.update({key: value})
    if args.seed is not None:
        seed = args.seed
    devices += [DeviceConfig.from_cli(spec) for spec in args.device or []]
    if args.control:
        control = args.control
    if not devices:
        raise ValueError("no devices: give --device or a --config with devices")
    return channel, seed, devices, control


async def run(args: argparse.Namespace) -> int:
    channel, seed, devices, control = build_config(args)
    radio = VirtualRadio(channel, seed)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, radio.stopped.set)
    try:
        for config in devices:
            await radio.add_device(config)
        if control:
            await radio.start_control(control)
        line = json.dumps(radio.ready_line())
        if args.ready_file:  # first, so that both signals are up once either is
            tmp = args.ready_file + ".tmp"
            with open(tmp, "w", encoding="utf-8") as handle:
                handle.write(line + "\n")
            os.replace(tmp, args.ready_file)
        print(line, flush=True)
        await radio.stopped.wait()
    finally:
        await radio.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Bumble virtual controllers on one simulated radio link, for HCI hosts.")
    parser.add_argument("--config", help="JSON file: {channel, seed, control, devices:[...]}")
    parser.add_argument("--device", action="append", metavar="SPEC",
                        help="name=N,transport=tcp-server:127.0.0.1:0[,x=,y=,z=,tx_power=,"
                             "sensitivity=,public_address=,keep_state_on_disconnect=,"
                             "quirk_disallow_redundant_scan_disable=] (repeatable)")
    parser.add_argument("--control", help="unix:PATH or tcp:127.0.0.1:PORT (0 = any free port)")
    parser.add_argument("--preset", choices=sorted(CHANNEL_PRESETS))
    parser.add_argument("--a1m", type=float, help="attenuation at 1 m, dB")
    parser.add_argument("--slope", type=float, help="path loss slope, dB per decade of distance")
    parser.add_argument("--sigma", type=float, help="shadowing standard deviation, dB")
    parser.add_argument("--loss", type=float, help="packet loss probability 0..1")
    parser.add_argument("--seed", type=int)
    parser.add_argument("--ready-file", help="also write the ready JSON line to this file")
    parser.add_argument("--log-level", default="WARNING")
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("bumble").setLevel(max(logging.WARNING, log.getEffectiveLevel()))
    try:
        return asyncio.run(run(args))
    except (ValueError, OSError) as error:
        print(f"vradio: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
