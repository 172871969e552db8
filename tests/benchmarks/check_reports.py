"""Real-browser check of the HTML reports (issue: "every shipped scenario's report renders without console
errors, with every image loaded and no horizontal page overflow at 1400 px").

    python tests/benchmarks/check_reports.py --results results/quickstart [--results DIR ...]
    python tests/benchmarks/check_reports.py --run            # run every shipped scenario first (long)

Each ``report.html`` is opened in headless Chromium (Debian's ``chromium``; installed with apt-get when
absent and this runs as root) in a 1400 x 1000 window.  A copy of the report gets a small script that,
once the page has loaded, records the number of images, the ones that did not decode, and the page's
scroll width against the window's; Chromium's ``--dump-dom`` prints the page with that record, and its
log (``--enable-logging=stderr``) carries every console message.  A report passes with no console error,
no broken image and a scroll width of at most the window's.  Wide tables are meant to scroll inside
their own box, not to widen the page.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WIDTH, HEIGHT = 1400, 1000
PROBE = """<script>
window.addEventListener('load', function () {
  var imgs = Array.prototype.slice.call(document.images);
  var broken = imgs.filter(function (i) { return !(i.complete && i.naturalWidth > 0); }).length;
  document.body.setAttribute('data-check', JSON.stringify({images: imgs.length, broken: broken,
    scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth}));
});
</script>"""
CHECK = re.compile(r'data-check="([^"]*)"')


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    if os.geteuid() != 0:
        sys.exit("no chromium on PATH; install Debian's chromium package (apt-get install chromium)")
    subprocess.run(["apt-get", "install", "-y", "-q", "chromium"], check=True, stdout=subprocess.DEVNULL)
    return shutil.which("chromium") or sys.exit("apt-get installed no chromium")


def check(browser: str, report: Path) -> dict:
    """Open ``report`` in the browser; returns the probe's record and the console errors."""
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "report.html"
        page.write_text(report.read_text().replace("</body>", PROBE + "</body>", 1))
        proc = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                               f"--window-size={WIDTH},{HEIGHT}", "--enable-logging=stderr", "--v=0",
                               "--virtual-time-budget=10000", "--dump-dom", page.as_uri()],
                              capture_output=True, text=True, timeout=300)
    found = CHECK.search(proc.stdout)
    record = json.loads(html.unescape(found.group(1))) if found else None
    console = [line for line in proc.stderr.splitlines() if "CONSOLE" in line and "ERROR" in line.upper()]
    return {"record": record, "console_errors": console}


def run_scenarios(out: Path) -> list[Path]:
    dirs = []
    for scenario in sorted((ROOT / "scenarios").glob("*.toml")):
        target = out / scenario.stem
        print(f"running {scenario.name} ...", flush=True)
        subprocess.run([sys.executable, "-m", "whatif.cli", "run", str(scenario), "--out", str(target), "--json"],
                       check=True, stdout=subprocess.DEVNULL)
        dirs.append(target)
    return dirs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", action="append", type=Path, default=[], help="a results directory (repeatable)")
    ap.add_argument("--run", action="store_true", help="run every shipped scenario into a temporary directory")
    args = ap.parse_args()
    browser = chromium()
    with tempfile.TemporaryDirectory() as tmp:
        dirs = list(args.results) + (run_scenarios(Path(tmp)) if args.run else [])
        if not dirs:
            ap.error("give --results DIR or --run")
        print(f"{'report':40s} {'images':>6s} {'broken':>6s} {'width':>6s} {'console errors':>14s}  verdict")
        failed = 0
        for d in dirs:
            result = check(browser, d / "report.html")
            rec = result["record"]
            ok = rec is not None and rec["broken"] == 0 and rec["scrollWidth"] <= rec["innerWidth"] \
                and not result["console_errors"]
            failed += not ok
            width = f"{rec['scrollWidth']}" if rec else "?"
            print(f"{d.name:40s} {rec['images'] if rec else '?':>6} {rec['broken'] if rec else '?':>6} "
                  f"{width:>6s} {len(result['console_errors']):>14d}  {'ok' if ok else 'FAIL'}")
            for line in result["console_errors"]:
                print(f"    {line}")
        print(f"{len(dirs) - failed} of {len(dirs)} reports pass at {WIDTH} px")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
