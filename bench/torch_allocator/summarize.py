"""Reads the JSON lines the GPU checks printed and writes the comparison as Markdown:
losses bit for bit, peaks and counters, wall time, per-op cost, OOM and graphs.

  python3 summarize.py runs.jsonl > summary.md
"""

import json
import sys


def main(path):
    runs = [json.loads(line) for line in open(path) if line.startswith("{")]
    train = [r for r in runs if "loss_bits" in r]
    ops = [r for r in runs if "through_pytorch" in r]
    checks = [r for r in runs if "graph" in r]
    print("## Training loop: PyTorch's allocator against cudascope's\n")
    print("| conf | losses bit-equal | peak allocated (PyTorch / cudascope) | peak reserved | allocations | cudaMalloc calls | wall s (PyTorch / cudascope) | after warm-up |")
    print("|---|---|---|---|---|---|---|---|")
    by_conf = {}
    for r in train:
        by_conf.setdefault((r["conf"], r.get("label", "")), {}).setdefault(r["allocator"], []).append(r)
    for (conf, _), pair in by_conf.items():
        if "pytorch" not in pair or "cudascope" not in pair:
            continue
        for p, c in zip(pair["pytorch"], pair["cudascope"]):
            ps, cs = p["stats"], c["stats"]
            equal = p["loss_bits"] == c["loss_bits"]
            print(f"| `{conf or 'default'}` | {'yes' if equal else 'NO'} ({len(p['loss_bits'])} steps, last {p['last_loss']:.6f}) "
                  f"| {ps['allocated_bytes.all.peak']} / {cs['allocated_bytes.all.peak']} "
                  f"| {ps['reserved_bytes.all.peak']} / {cs['reserved_bytes.all.peak']} "
                  f"| {ps['allocation.all.allocated']} / {cs['allocation.all.allocated']} "
                  f"| {ps['num_device_alloc']} / {cs['num_device_alloc']} "
                  f"| {p['wall_s']:.3f} / {c['wall_s']:.3f} | {p['wall_after_warmup_s']:.3f} / {c['wall_after_warmup_s']:.3f} |")
    if ops:
        print("\n## Allocator cost per operation (ns)\n")
        print("| workload | PyTorch | cudascope through PyTorch | cudascope hooks alone |")
        print("|---|---|---|---|")
        p = next((r for r in ops if r["allocator"] == "pytorch"), None)
        c = next((r for r in ops if r["allocator"] == "cudascope"), None)
        for key in (p or c)["through_pytorch"]:
            row = [f"{r['through_pytorch'][key]:.0f}" if r else "-" for r in (p, c)]
            row.append(f"{c['through_hooks'][key]:.0f}" if c and c["through_hooks"] else "-")
            print(f"| {key} | " + " | ".join(row) + " |")
    for r in checks:
        print(f"\n## OOM and graphs, {r['allocator']}\n")
        print("```\n" + json.dumps(r, indent=1) + "\n```")


if __name__ == "__main__":
    main(sys.argv[1])
