"""An independent reader and writer of the key server layouts for the tests: protobuf wire
format by hand, zip by Python's zipfile, ECDSA P-256 SHA-256 by `cryptography`. None of it
shares code with gaend's KeyDistribution target (docs/key-server.md describes the layouts)."""

from __future__ import annotations

import io
import json
import os
import struct
import subprocess
import zipfile
from pathlib import Path

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

HEADER = b"EK Export v1    "
CWA_ROOT = "version/v1/diagnosis-keys/country"
ECDSA_OID = "1.2.840.10045.4.3.2"


# --- protobuf wire format -------------------------------------------------------------------

def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, i
        shift += 7


def fields(buf: bytes) -> list[tuple[int, object]]:
    out, i = [], 0
    while i < len(buf):
        tag, i = _varint(buf, i)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            v, i = _varint(buf, i)
        elif wire == 1:
            v = struct.unpack_from("<Q", buf, i)[0]
            i += 8
        elif wire == 2:
            n, i = _varint(buf, i)
            v = buf[i:i + n]
            i += n
        elif wire == 5:
            v = struct.unpack_from("<I", buf, i)[0]
            i += 4
        else:
            raise ValueError(f"wire type {wire}")
        out.append((number, v))
    return out


def _enc_varint(v: int) -> bytes:
    if v < 0:
        v += 1 << 64
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def _field(number: int, wire: int, payload: bytes) -> bytes:
    return _enc_varint(number << 3 | wire) + payload


def _ld(number: int, data: bytes) -> bytes:
    return _field(number, 2, _enc_varint(len(data)) + data)


def sig_info(info: dict) -> bytes:
    return _ld(3, info["version"].encode()) + _ld(4, info["id"].encode()) + _ld(5, ECDSA_OID.encode())


def _parse_info(b: bytes) -> dict:
    d = dict(fields(b))
    return {"version": d.get(3, b"").decode(), "id": d.get(4, b"").decode(), "algorithm": d.get(5, b"").decode()}


# --- packages --------------------------------------------------------------------------------

def read_package(data: bytes) -> dict:
    """A key package (zip of export.bin + export.sig) as a dict; raises on anything malformed."""
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        assert sorted(z.namelist()) == ["export.bin", "export.sig"], z.namelist()
        binary, sig = z.read("export.bin"), z.read("export.sig")
    assert binary[:16] == HEADER
    export = {"keys": [], "infos": [], "batch_num": 1, "batch_size": 1, "bin": binary}
    for number, v in fields(binary[16:]):
        if number == 1:
            export["start"] = v
        elif number == 2:
            export["end"] = v
        elif number == 3:
            export["region"] = v.decode()
        elif number == 4:
            export["batch_num"] = v
        elif number == 5:
            export["batch_size"] = v
        elif number == 6:
            export["infos"].append(_parse_info(v))
        elif number == 7:
            k = dict(fields(v))
            export["keys"].append((k[1].hex(), k[3], k.get(4, 144)))
    export["signatures"] = []
    for number, v in fields(sig):
        assert number == 1
        s = dict(fields(v))
        export["signatures"].append({"info": _parse_info(s[1]), "batch_num": s.get(2), "batch_size": s.get(3), "signature": s[4]})
    return export


def verify(export: dict, trusted: dict[tuple[str, str], ec.EllipticCurvePublicKey]) -> list[bool]:
    """Per signature in export.sig: verified by the trusted key of its id and version."""
    results = []
    for s in export["signatures"]:
        key = trusted.get((s["info"]["id"], s["info"]["version"]))
        ok = False
        if key is not None and s["info"]["algorithm"] == ECDSA_OID:
            try:
                key.verify(s["signature"], export["bin"], ec.ECDSA(hashes.SHA256()))
                ok = True
            except Exception:
                ok = False
        results.append(ok)
    return results


def write_package(path: Path, start: int, end: int, region: str, keys: list[tuple[bytes, int, int]],
                  signers: list[tuple[ec.EllipticCurvePrivateKey, dict]], batch_num: int = 1, batch_size: int = 1) -> bytes:
    """A package as a key server writes it: signature_infos and one TEKSignature per signer."""
    body = _field(1, 1, struct.pack("<Q", start)) + _field(2, 1, struct.pack("<Q", end)) + _ld(3, region.encode())
    body += _field(4, 0, _enc_varint(batch_num)) + _field(5, 0, _enc_varint(batch_size))
    for _, info in signers:
        body += _ld(6, sig_info(info))
    for data, rsin, period in keys:
        body += _ld(7, _ld(1, data) + _field(3, 0, _enc_varint(rsin)) + _field(4, 0, _enc_varint(period)))
    binary = HEADER + body
    sigs = b""
    for key, info in signers:
        der = key.sign(binary, ec.ECDSA(hashes.SHA256()))
        sigs += _ld(1, _ld(1, sig_info(info)) + _field(2, 0, _enc_varint(batch_num)) + _field(3, 0, _enc_varint(batch_size)) + _ld(4, der))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("export.bin", binary)
        z.writestr("export.sig", sigs)
    data = buf.getvalue()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return data


def signed_config(path: Path, config: dict, signers) -> bytes:
    payload = json.dumps(config, sort_keys=True).encode()
    sigs = b""
    for key, info in signers:
        der = key.sign(payload, ec.ECDSA(hashes.SHA256()))
        sigs += _ld(1, _ld(1, sig_info(info)) + _field(2, 0, _enc_varint(1)) + _field(3, 0, _enc_varint(1)) + _ld(4, der))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("export.bin", payload)
        z.writestr("export.sig", sigs)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(buf.getvalue())
    return buf.getvalue()


# --- keys ------------------------------------------------------------------------------------

def new_signing_key(directory: Path, name: str) -> tuple[ec.EllipticCurvePrivateKey, Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    private = directory / f"{name}.pem"
    public = directory / f"{name}.pub.pem"
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    public.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return key, private, public


def publish(gaenctl: Path, inbox: Path, out: Path, signers: list[tuple[Path, str, str]], now: int, *extra: str,
            check: bool = True) -> subprocess.CompletedProcess:
    args = [str(gaenctl), "keys", "publish", "--inbox", str(inbox), "-o", str(out), "--now", str(now)]
    for pem, kid, version in signers:
        args += ["--signing-key", str(pem), "--key-id", kid, "--key-version", version]
    args += list(extra)
    return subprocess.run(args, capture_output=True, text=True, check=check)


def cwa_get(tree: Path, endpoint: str) -> bytes:
    """An endpoint of the CWA layout, as the web server serves it (ENDPOINT/index on disk)."""
    return (tree / endpoint / "index").read_bytes()


def tree_bytes(tree: Path) -> dict[str, bytes]:
    return {str(p.relative_to(tree)): p.read_bytes() for p in sorted(tree.rglob("*")) if p.is_file()}


def set_mtime(path: Path, t: int) -> None:
    os.utime(path, (t, t))
