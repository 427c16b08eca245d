"""The report's figures as a journal's reader meets them, checked on what is drawn (issue 32,
item 6), and `trial import dp3t`'s calibration choices (item 5), through the binary.

Each figure is rendered to PNG with rsvg-convert (Debian's librsvg2-bin, scripts/setup.sh) and
inspected with Pillow (tools/requirements.txt): the figure is not blank, the threshold labels
are drawn in distinct regions, the close-contact line is where its distance puts it. Label
boxes are estimated from the SVG with generous margins (0.62 em per character, more than
DejaVu Sans' average), so the checks do not hang on a font's exact metrics."""
import csv
import io
import math
import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from PIL import Image

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "trial-examples"
THRESHOLDS = [50, 52.5, 55, 57.5, 60, 62.5, 65, 67.5, 70]
DISTANCES = [0.5, 1, 1.5, 2, 3, 4.5, 7, 10, 16.563589586801527]


def gaenctl(bin_dir, *args, ok=True):
    r = subprocess.run([str(bin_dir / "gaenctl"), *map(str, args)], capture_output=True, text=True, timeout=300)
    if ok:
        assert r.returncode == 0, r.stderr
    return r


def render(svg: Path) -> Image.Image:
    assert shutil.which("rsvg-convert"), "rsvg-convert (Debian's librsvg2-bin) is needed: scripts/setup.sh installs it"
    png = subprocess.run(["rsvg-convert", str(svg)], capture_output=True, check=True, timeout=60).stdout
    return Image.open(io.BytesIO(png)).convert("RGB")


def near(p, colour, tolerance=40):
    return all(abs(a - b) <= tolerance for a, b in zip(p, colour))


def ink(img, box, colour, tolerance=60):
    """Pixels near `colour` inside box (x0, y0, x1, y1)."""
    x0, y0, x1, y1 = (int(round(v)) for v in box)
    px = img.load()
    return sum(1 for x in range(max(0, x0), min(img.width, x1)) for y in range(max(0, y0), min(img.height, y1))
               if near(px[x, y], colour, tolerance))


def not_blank(img):
    px = img.load()
    dark = sum(1 for x in range(0, img.width, 2) for y in range(0, img.height, 2) if sum(px[x, y]) < 600)
    return dark / ((img.width // 2) * (img.height // 2))


def texts(svg: str, cls: str):
    """(x, y, anchor, font size, text) of the <text class="cls"> elements."""
    out = []
    for m in re.finditer(r'<text class="%s"([^>]*)>([^<]*)</text>' % cls, svg):
        attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', m.group(1)))
        out.append((float(attrs.get("x", 0)), float(attrs.get("y", 0)), attrs.get("text-anchor", "start"),
                    float(attrs.get("font-size", 12)), m.group(2)))
    return out


def box(x, y, anchor, size, text, em=0.62):
    w = len(text) * size * em
    x0 = x - w if anchor == "end" else (x - w / 2 if anchor == "middle" else x)
    return (x0, y - size, x0 + w, y + 0.25 * size)


def overlap(a, b):
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def round_ticks(values):
    """Ticks on multiples of one 1, 2 or 5 x 10^k step."""
    steps = {round(b - a, 9) for a, b in zip(values, values[1:])}
    assert len(steps) == 1, values
    step = steps.pop()
    mantissa = step / 10 ** math.floor(math.log10(step))
    assert any(abs(mantissa - m) < 1e-9 for m in (1, 2, 5)), (step, values)
    assert all(abs(v / step - round(v / step)) < 1e-9 for v in values), values


@pytest.fixture(scope="module")
def pooled(tmp_path_factory, bin_dir):
    """Six scenarios, 302 pairs, nine distances (one of them a converted, unround value),
    nine thresholds a few dB apart: what made every label collide before."""
    d = tmp_path_factory.mktemp("figures")
    rnd = random.Random(7)
    with open(d / "pooled.csv", "w") as f:
        f.write("time,receiver,transmitter,distance,attenuation,site\n")
        t = 1591005600
        for s in range(6):
            for p in range(51 if s < 2 else 50):
                for dist in DISTANCES[p % 3:]:
                    for _ in range(3):
                        a = round(55 + 20 * math.log10(dist) + rnd.gauss(0, 5))
                        f.write(f"{t},rx-{s}-{p},tx-{s}-{p},{dist!r},{a},{s + 1:02d}_scenario\n")
                        t += 1
    gaenctl(bin_dir, "trial", "report", "--attenuations", d / "pooled.csv", "-o", d / "report",
            "--thresholds", ",".join(map(str, THRESHOLDS)), "--close-contact", "1.5")
    return d / "report"


def test_pooled_report_is_titled_as_pooled_and_numbers_are_readable(pooled):
    md = (pooled / "report.md").read_text()
    assert md.startswith("# Trial report: 6 sites pooled (01_scenario ... 06_scenario)"), md[:200]
    assert "Sites (datasets), pooled: 01_scenario, 02_scenario" in md
    for name in ["report.md", "receivers.csv", "pairs.csv", "distances.csv", "detection_probability.csv", "sweep.csv", "detection.csv"]:
        noisy = re.findall(r"\d\.\d{7,}", (pooled / name).read_text())
        assert not noisy, (name, noisy[:3])
    for name in ["plot.svg", "sweep.svg", "heatmap.svg", "residuals.svg"]:
        svg = (pooled / name).read_text()
        assert "6 sites pooled" in svg and "01_scenario –" not in svg, name
        assert '<text class="caption"' in svg and "data: pooled.csv" in svg, name


def test_sweep_labels_round_ticks_and_distinct_label_regions(pooled):
    svg = (pooled / "sweep.svg").read_text()
    labels = texts(svg, "threshold")
    assert [t[4] for t in labels] == [f"{v:g} dB" for v in THRESHOLDS]  # 57.5 stays 57.5
    boxes = [box(*t) for t in labels]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert not overlap(a, b), (a, b)
    ticks = [float(t[4]) for t in texts(svg, "tick")]
    assert len(ticks) >= 4
    round_ticks(ticks)
    img = render(pooled / "sweep.svg")
    assert not_blank(img) > 0.02
    # Every label is drawn in its own region: orange ink inside each box, boxes disjoint above.
    for b, t in zip(boxes, labels):
        assert ink(img, b, (204, 102, 0)) >= 6, t


def test_plot_close_contact_line_counts_and_legend(pooled):
    svg = (pooled / "plot.svg").read_text()
    line = re.search(r'<line class="close-contact" x1="([0-9.]+)" y1="([0-9.]+)" x2="[0-9.]+" y2="([0-9.]+)"', svg)
    assert line, "no close-contact line"
    x, y0, y1 = (float(v) for v in line.groups())
    # On the log axis between the 1 m and 2 m ticks, at log10(1.5) of the way.
    ticks = {t[4]: t[0] for t in texts(svg, "tick")} or {m.group(2): float(m.group(1)) for m in re.finditer(r'<text x="([0-9.]+)" y="[0-9.]+" text-anchor="middle">([0-9.]+)</text>', svg)}
    assert abs(x - (ticks["1"] + (ticks["2"] - ticks["1"]) * math.log10(1.5) / math.log10(2))) < 1.5
    img = render(pooled / "plot.svg")
    assert not_blank(img) > 0.02
    green = (0, 158, 115)
    on = ink(img, (x - 1.5, y0, x + 1.5, y1), green, 50)
    off = ink(img, (x + 20, y0, x + 23, y1), green, 50)
    assert on >= 0.4 * (y1 - y0), (on, y1 - y0)
    assert off < 0.05 * (y1 - y0), off
    # n per distance, one each, and a legend that summarises 302 pairs instead of listing 8.
    counts = texts(svg, "n")
    assert len(counts) == len(DISTANCES) and all(c[4].startswith("n=") for c in counts), counts
    assert "302 pairs, one colour" in svg and "more pairs" not in svg
    # The threshold labels of the horizontal lines are kept apart too.
    boxes = [box(*t) for t in texts(svg, "threshold")]
    assert len(boxes) == len(THRESHOLDS)
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert not overlap(a, b), (a, b)


def test_heatmap_log_columns_edges_scale_and_fit(pooled):
    svg = (pooled / "heatmap.svg").read_text()
    # The fit is a straight line (two points) on the log axis; columns are as wide as their edges say.
    fit = re.search(r'<path class="fit" d="([^"]+)"', svg).group(1)
    assert len(re.findall(r"[ML]", fit)) == 2, fit
    edges = sorted({float(m) for m in re.findall(r'<line class="edge" x1="([0-9.]+)"', svg)})
    widths = [b - a for a, b in zip(edges, edges[1:])]
    assert len(edges) == len(DISTANCES) + 1 and max(widths) > 1.3 * min(widths), widths
    scale = [float(t[4].rstrip(" %")) for t in texts(svg, "scale")]
    assert len(scale) >= 4 and scale[0] == 0, scale
    round_ticks(scale)
    ticks = [float(t[4]) for t in texts(svg, "tick")]
    assert all(round(v / 10 ** math.floor(math.log10(v)), 9) in (1, 2, 5) for v in ticks), ticks
    assert len(texts(svg, "n")) == len(DISTANCES)
    img = render(pooled / "heatmap.svg")
    assert not_blank(img) > 0.05
    x = float(re.search(r'<line class="close-contact" x1="([0-9.]+)"', svg).group(1))
    assert ink(img, (x - 1.5, 100, x + 1.5, 400), (0, 158, 115), 50) > 100


def test_legend_names_every_pair_in_full(tmp_path, bin_dir):
    names = [("MITLL-Pixel2-FrontPocket-Rx07", "MITLL-iPhoneXR-BackPocket-Tx11"),
             ("MITLL-Pixel2-FrontPocket-Rx07", "MITLL-iPhoneXR-BackPocket-Tx12"),
             ("MITLL-GalaxyS10-Hand-Rx03", "MITLL-iPhoneXR-BackPocket-Tx11")]
    with open(tmp_path / "mitll.csv", "w") as f:
        f.write("time,receiver,transmitter,distance,attenuation\n")
        t = 0
        for rx, tx in names:
            for d in [0.3048, 0.9144, 1.8288, 3.048]:
                for k in range(5):
                    f.write(f"{t},{rx},{tx},{d},{round(60 + 20 * math.log10(d)) + k}\n")
                    t += 1
    gaenctl(bin_dir, "trial", "report", "--attenuations", tmp_path / "mitll.csv", "-o", tmp_path / "r")
    svg = (tmp_path / "r" / "plot.svg").read_text()
    shown = [t[4] for t in texts(svg, "legend-pair")]
    assert sorted(shown) == sorted(f"{tx} → {rx}" for rx, tx in names), shown
    width = float(re.search(r'<svg[^>]* width="([0-9.]+)"', svg).group(1))
    for t in texts(svg, "legend-pair"):
        assert box(*t)[2] <= width, (t, width)
    img = render(tmp_path / "r" / "plot.svg")
    # The legend's text ends inside the image: the last columns are blank.
    px = img.load()
    assert all(sum(px[x, y]) > 700 for x in range(img.width - 3, img.width) for y in range(img.height)), "legend clipped"
    receivers = (tmp_path / "r" / "receivers.csv").read_text()
    assert "0.9144000000000001" not in receivers and "0.3048" in receivers


CONFIDENCE_TABLE = EXAMPLES / "en-calibration-2020-08-12.csv"


def dp3t_rows(path: Path):
    rows = [("r1", "SM-G960F", "t1", "Pixel 3a", -70),    # both measured, confidence 3
            ("r1", "SM-G960F", "t2", "SM-A415F", -75),    # not in the table: samsung by its name
            ("r1", "SM-G960F", "t3", "Nokia 7.2", -80),   # not in the table, no manufacturer known
            ("r1", "SM-G960F", "t3", "Nokia 7.2", -81),
            ("r1", "SM-G960F", "t4", "SM-A405FN", -72)]   # in the table at confidence 1
    with open(path, "w") as f:
        f.write("receiver_id,receiver_model,transmitter_id,transmitter_model,timestamp,rssi,tx_power,ground_truth_distance\n")
        for i, (rid, rm, tid, tm, rssi) in enumerate(rows):
            f.write(f"{rid},{rm},{tid},{tm},{1591005600000 + 1000 * i},{rssi},-21,2\n")


def read(path):
    return list(csv.DictReader(open(path)))


def test_dp3t_missing_models_named_with_their_rows(tmp_path, bin_dir):
    dp3t_rows(tmp_path / "exp.csv")
    r = gaenctl(bin_dir, "trial", "import", "dp3t", tmp_path / "exp.csv", "--calibration", CONFIDENCE_TABLE, "-o", tmp_path / "out.csv")
    assert "models not in the calibration table en-calibration-2020-08-12.csv (2020-08-12), rows left out: " \
           "'Nokia 7.2' (0 rows as receiver, 2 as transmitter); 'SM-A415F' (0 rows as receiver, 1 as transmitter)" in r.stderr, r.stderr
    assert "calibration confidence of the models used: 2 at 3 (high), 1 at 1 (low)" in r.stderr, r.stderr
    rows = read(tmp_path / "out.csv")
    assert [x["transmitter_model"] for x in rows] == ["Pixel 3a", "SM-A405FN"]
    assert [x["attenuation"] for x in rows] == ["37", "42"]  # -29 - (-70 + 4); -26 - (-72 + 4)
    assert [x["calibration_confidence"] for x in rows] == ["3", "1"]
    assert {x["calibration_table"] for x in rows} == {"en-calibration-2020-08-12.csv (2020-08-12)"}


def test_dp3t_fallbacks_and_minimum_confidence(tmp_path, bin_dir):
    dp3t_rows(tmp_path / "exp.csv")
    r = gaenctl(bin_dir, "trial", "import", "dp3t", tmp_path / "exp.csv", "--calibration", CONFIDENCE_TABLE,
                "--calibration-fallback", "manufacturer,default", "--minimum-calibration-confidence", "2", "-o", tmp_path / "out.csv")
    rows = {(x["transmitter"], x["rssi"]): x for x in read(tmp_path / "out.csv")}
    assert len(rows) == 5, r.stderr
    # samsung's median over its three rows: correction 6, TX -25.
    assert rows[("t2", "-75")]["calibration_fallback"] == "transmitter:manufacturer"
    assert rows[("t2", "-75")]["calibration_tx"] == "-25"
    # Below the minimum confidence: its own manufacturer's median, not its row's -26.
    assert rows[("t4", "-72")]["calibration_fallback"] == "transmitter:manufacturer"
    assert rows[("t4", "-72")]["attenuation"] == "43"  # -25 - (-72 + 4)
    # No manufacturer: the table's median (it has no default row): TX -25.
    assert rows[("t3", "-80")]["calibration_fallback"] == "transmitter:default"
    assert rows[("t3", "-80")]["calibration_confidence"] == "0"
    assert "'Nokia 7.2' from default (not in the table; the median of the table's 5 rows (it has no default row))" in r.stderr, r.stderr
    assert "'SM-A415F' from manufacturer samsung (not in the table; manufacturer the table's samsung models start like it ('SM-A4'))" in r.stderr
    # Stated by the user instead of guessed.
    r = gaenctl(bin_dir, "trial", "import", "dp3t", tmp_path / "exp.csv", "--calibration", CONFIDENCE_TABLE,
                "--calibration-fallback", "manufacturer", "--model-manufacturer", "Nokia 7.2=apple", "-o", tmp_path / "out2.csv")
    assert "'Nokia 7.2' from manufacturer apple (not in the table; manufacturer as given)" in r.stderr, r.stderr
    # A table without a confidence column cannot be filtered by it; bad values are named.
    r = gaenctl(bin_dir, "trial", "import", "dp3t", tmp_path / "exp.csv", "--calibration", EXAMPLES / "en-calibration-2020-12.csv",
                "--minimum-calibration-confidence", "2", "-o", tmp_path / "out3.csv", ok=False)
    assert r.returncode != 0 and "has no calibration confidence column" in r.stderr and not (tmp_path / "out3.csv").exists()
    r = gaenctl(bin_dir, "trial", "import", "dp3t", tmp_path / "exp.csv", "--calibration", CONFIDENCE_TABLE,
                "--calibration-fallback", "oem", "-o", tmp_path / "out4.csv", ok=False)
    assert r.returncode != 0 and "--calibration-fallback: expected none, manufacturer, default or manufacturer,default, got 'oem'" in r.stderr


def test_dp3t_convention_and_the_table_in_the_figures(tmp_path, bin_dir):
    dp3t_rows(tmp_path / "exp.csv")
    gaenctl(bin_dir, "trial", "import", "dp3t", tmp_path / "exp.csv", "--calibration", CONFIDENCE_TABLE,
            "--calibration-convention", "dp3t", "-o", tmp_path / "out.csv")
    first = read(tmp_path / "out.csv")[0]
    # TX of the receiver's model (SM-G960F, -25), correction of the transmitter's (Pixel 3a, 3).
    assert (first["attenuation"], first["calibration_tx"], first["rssi_correction"]) == ("42", "-25", "3")
    assert first["calibration_table"] == "en-calibration-2020-08-12.csv (2020-08-12), DP-3T convention"
    gaenctl(bin_dir, "trial", "report", "--attenuations", tmp_path / "out.csv", "-o", tmp_path / "r")
    for name in ["plot.svg", "sweep.svg", "heatmap.svg"]:
        assert "calibration: en-calibration-2020-08-12.csv (2020-08-12), DP-3T convention" in (tmp_path / "r" / name).read_text(), name
    # The published example keeps the transmitter model as written under dp3t (uncorrected).
    gaenctl(bin_dir, "trial", "import", "dp3t", EXAMPLES / "dp3t-results.csv", "--calibration", EXAMPLES / "en-calibration-2020-12.csv",
            "--calibration-convention", "dp3t", "-o", tmp_path / "pub.csv")
    rows = read(tmp_path / "pub.csv")
    assert any(x["transmitter"] == "t2" and x["transmitter_model"] == "SM-G960F/DS" for x in rows)


def test_two_tables_compared_in_one_run(tmp_path, bin_dir):
    june, december = EXAMPLES / "en-calibration-2020-06.csv", EXAMPLES / "en-calibration-2020-12.csv"
    r = gaenctl(bin_dir, "trial", "import", "dp3t", EXAMPLES / "dp3t-results.csv", "--calibration", june, "--calibration", december,
                "--calibration-date", "2020-07-15", "--compare-calibration-date", "2020-12-31", "-o", tmp_path / "june.csv")
    # The output is June's; the comparison agrees with importing December's on its own.
    gaenctl(bin_dir, "trial", "import", "dp3t", EXAMPLES / "dp3t-results.csv", "--calibration", december, "-o", tmp_path / "dec.csv")
    a = [float(x["attenuation"]) for x in read(tmp_path / "june.csv")]
    b = [float(x["attenuation"]) for x in read(tmp_path / "dec.csv")]
    shifts = [y - x for x, y in zip(a, b)]
    mean = sum(shifts) / len(shifts)
    assert (f"compared with en-calibration-2020-12.csv (2020-12-01): {sum(s != 0 for s in shifts)} of the {len(shifts)} rows both "
            f"tables calibrate change attenuation (mean {mean:.2f} dB, largest {max(map(abs, shifts)):g} dB") in r.stderr, r.stderr
    assert "models that differ: 'Pixel 3a' TX -30 -> -29, correction 2 -> 3; 'SM-G960F/DS' TX -24 -> -25, correction 5 -> 4" in r.stderr
