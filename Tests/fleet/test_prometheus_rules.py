"""The shipped Prometheus alert rules (deploy/prometheus/gaend-alerts.yml) are valid and pass
their promtool unit tests (deploy/prometheus/gaend-alerts-test.yml), with Debian's promtool."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RULES = REPO / "deploy" / "prometheus"
PROMTOOL = shutil.which("promtool")

pytestmark = pytest.mark.skipif(PROMTOOL is None, reason="promtool not installed (Debian package prometheus; scripts/setup.sh installs it)")


def promtool(*args: str, cwd: Path = RULES) -> subprocess.CompletedProcess:
    return subprocess.run([PROMTOOL, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_rules_are_valid():
    out = promtool("check", "rules", "gaend-alerts.yml")
    assert out.returncode == 0, out.stdout + out.stderr


def test_rule_unit_tests_pass():
    out = promtool("test", "rules", "gaend-alerts-test.yml")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS" in out.stdout


def test_every_alert_is_tested():
    """Each alert of the rule file appears in at least one alert_rule_test."""
    import yaml  # PyYAML comes with Bumble's dependencies

    rules = yaml.safe_load((RULES / "gaend-alerts.yml").read_text())
    alerts = {r["alert"] for g in rules["groups"] for r in g["rules"] if "alert" in r}
    tests = yaml.safe_load((RULES / "gaend-alerts-test.yml").read_text())
    tested = {t["alertname"] for case in tests["tests"] for t in case.get("alert_rule_test", []) if t.get("exp_alerts")}
    assert alerts == tested, f"alerts without a firing test: {sorted(alerts - tested)}"


def test_a_broken_rule_fails_the_tests(tmp_path):
    """The tests can fail: the off-air alert with a 5 minute hold fires before the tests expect."""
    for f in ("gaend-alerts.yml", "gaend-alerts-test.yml"):
        shutil.copy(RULES / f, tmp_path / f)
    rules = tmp_path / "gaend-alerts.yml"
    text = rules.read_text()
    marker = "expr: gaend_up == 0 or gaend_advertising_on_air == 0\n        for: 10m"
    assert marker in text
    rules.write_text(text.replace(marker, marker.replace("10m", "5m")))
    out = promtool("test", "rules", "gaend-alerts-test.yml", cwd=tmp_path)
    assert out.returncode != 0 and "GaendOffAir" in out.stdout + out.stderr
