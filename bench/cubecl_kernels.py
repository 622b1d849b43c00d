"""Sum a cubecl profiling log ("| 1.2ms | KernelName | …" lines) per kernel: total time,
share, launches and mean, the largest first. Usage: cubecl_kernels.py LOG [TOP]."""
import collections
import re
import sys

UNITS = {"ns": 1e-6, "µs": 1e-3, "us": 1e-3, "ms": 1.0, "s": 1e3}


def ms(text):
    m = re.fullmatch(r"([0-9.]+)(ns|µs|us|ms|s)", text.strip())
    return float(m.group(1)) * UNITS[m.group(2)] if m else None


def main():
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    total, count = collections.Counter(), collections.Counter()
    for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
        parts = line.rstrip("\n").split("|")
        if len(parts) < 3 or parts[0].strip():
            continue
        t = ms(parts[1])
        if t is None:
            continue
        segments = [p.strip() for p in parts[2:]]
        # Matmul kernels name every generic: keep the first and the last (its hash).
        name = segments[0] if len(segments) == 1 else f"{segments[0]} … {segments[-1]}"
        total[name] += t
        count[name] += 1
    if not count:
        sys.exit(f"{sys.argv[1]}: no timed kernels (was the profiling logger on?)")
    all_ms = sum(total.values())
    print(f"{sum(count.values())} kernels, {all_ms:.1f} ms on the device")
    print(f"{'ms':>10} {'share':>6} {'launches':>8} {'mean µs':>9}  kernel")
    for name, t in total.most_common(top):
        print(f"{t:10.2f} {100 * t / all_ms:5.1f}% {count[name]:8d} {1e3 * t / count[name]:9.1f}  {name[:100]}")


if __name__ == "__main__":
    main()
