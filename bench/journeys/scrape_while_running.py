#!/usr/bin/env python3
"""Runs a command that serves metrics at ADDR (cudascope run --metrics ADDR -- ...), scrapes
/metrics every INTERVAL seconds while it runs, and writes the last complete scrape to OUT.
Usage: scrape_while_running.py ADDR OUT INTERVAL -- COMMAND..."""
import subprocess
import sys
import time
import urllib.request

addr, out, interval = sys.argv[1], sys.argv[2], float(sys.argv[3])
command = sys.argv[sys.argv.index("--") + 1:]
child = subprocess.Popen(command)
last, scrapes = None, 0
while child.poll() is None:
    time.sleep(interval)
    try:
        with urllib.request.urlopen(f"http://{addr}/metrics", timeout=2) as r:
            last = r.read().decode()
            scrapes += 1
    except OSError:
        pass
print(f"{scrapes} scrapes while the program ran; exit {child.returncode}")
if last is not None:
    with open(out, "w") as f:
        f.write(last)
sys.exit(child.returncode or (0 if last else 1))
