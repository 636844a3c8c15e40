#!/usr/bin/env python3
"""results.json -> PNG plots next to it (matplotlib, Agg backend, no display): fanout.png, fanout-max.png,
latency-at-50.png, idle-storm.png, capacity-sim.png, proxy.png (each when its section ran)."""
import json
import sys
import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402

COLORS = {"wsps": "#1f77b4", "naive": "#d62728", "socketio": "#2ca02c", "pushpin": "#9467bd"}


def main(out: Path) -> None:
    r = json.loads((out / "results.json").read_text())
    fan = {k: v for k, v in (r.get("fanout") or {}).items() if v.get("steps")}
    if fan:
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4.5))
        for name, x in fan.items():
            steps = sorted((s for s in x["steps"]), key=lambda s: s["published"])
            c = COLORS.get(name)
            a1.plot([s["expected"] for s in steps], [s["delivered"] for s in steps], "o-", color=c, label=x["label"])
            a2.plot([s["delivered"] for s in steps], [s["p99"] for s in steps], "o-", color=c, label=x["label"])
        lim = max(s["expected"] for x in fan.values() for s in x["steps"])
        a1.plot([1000, lim], [1000, lim], ":", color="grey", label="delivered = offered")
        a1.set(xlabel="offered (published x subscribers) per s", ylabel="delivered per s", title="Fan-out throughput", xscale="log", yscale="log")
        a2.axhline(100, color="grey", ls=":", label="p99 limit 100 ms")
        a2.set(xlabel="delivered per s", ylabel="p99 publish->client (ms)", yscale="log", title="Latency under load")
        for a in (a1, a2):
            a.grid(alpha=0.3)
            a.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(out / "fanout.png", dpi=110)
        plt.close(fig)

        fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4.5))
        sat = [n for n in fan if fan[n].get("saturated") and fan[n]["saturated"].get("perCore")]
        bars = a1.bar(range(len(sat)), [fan[n]["saturated"]["perCore"] for n in sat], color=[COLORS.get(n, "#7f7f7f") for n in sat])
        for b, n in zip(bars, sat):
            x = fan[n]["saturated"]
            a1.annotate(f'{x["perCore"]:,.0f}\n({x["delivered"]:,}/s on {x["cpu"]["server"]:.2f} cores)', (b.get_x() + b.get_width() / 2, b.get_height()), ha="center", va="bottom", fontsize=7)
        a1.set_xticks(range(len(sat)), [fan[n]["label"] for n in sat], fontsize=7, rotation=10)
        if sat:
            a1.set_ylim(0, max(fan[n]["saturated"]["perCore"] for n in sat) * 1.2)
        a1.set(ylabel="deliveries per server CPU-second", title="At saturation (same offered load for all)")
        a1.grid(axis="y", alpha=0.3)
        names = [n for n in fan if fan[n].get("max")]
        if names:
            bars = a2.bar(range(len(names)), [fan[n]["max"]["delivered"] for n in names], color=[COLORS.get(n, "#7f7f7f") for n in names])
            for b, n in zip(bars, names):
                m = fan[n]["max"]
                a2.annotate(f'{m["delivered"]:,}/s\n{m["cpu"]["server"]:.2f} cores', (b.get_x() + b.get_width() / 2, b.get_height()), ha="center", va="bottom", fontsize=7)
            a2.set_xticks(range(len(names)), [fan[n]["label"] for n in names], fontsize=7, rotation=10)
            a2.set_ylim(0, max(fan[n]["max"]["delivered"] for n in names) * 1.2)
        else:
            a2.text(0.5, 0.5, "no server held p99 <= 100 ms\nat the lowest step in this run", ha="center", va="center", transform=a2.transAxes)
        a2.set(ylabel="max deliveries/s (p99 <= 100 ms)", title=f'Latency-bounded max, {r["params"].get("fanConns", r["params"]["conns"]):,} connections')
        a2.grid(axis="y", alpha=0.3)
        fig.tight_layout()
        fig.savefig(out / "fanout-max.png", dpi=110)
        plt.close(fig)

        fig, ax = plt.subplots(figsize=(7, 4))
        qs = ["p50", "p99", "p999"]
        width = 0.8 / max(1, len(names))
        for i, n in enumerate(names):
            a = fan[n].get("at50")
            if not a:
                continue
            ax.bar([j + i * width for j in range(3)], [a[q] for q in qs], width, color=COLORS.get(n), label=fan[n]["label"])
        ax.axhline(50, color="grey", ls=":", label="p99 target 50 ms")
        ax.set_xticks([j + width * (len(names) - 1) / 2 for j in range(3)], qs)
        ax.set(ylabel="ms", yscale="log", title="Latency at 50% of each server's max")
        ax.legend(fontsize=8)
        ax.grid(axis="y", alpha=0.3)
        fig.tight_layout()
        fig.savefig(out / "latency-at-50.png", dpi=110)
        plt.close(fig)

    idle = {k: v for k, v in (r.get("idle") or {}).items() if "rssPerConnBytes" in v}
    if idle:
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
        ns = list(idle)
        a1.bar([idle[n]["label"] for n in ns], [idle[n]["rssPerConnBytes"] / 1024 for n in ns], color=[COLORS.get(n) for n in ns])
        a1.axhline(4, color="grey", ls=":", label="target 4 KiB")
        a1.set(ylabel="KiB RSS per idle subscribed connection", title="Idle memory")
        a1.legend(fontsize=8)
        a2.bar([idle[n]["label"] for n in ns], [idle[n]["stormSeconds"] for n in ns], color=[COLORS.get(n) for n in ns])
        a2.set(ylabel="seconds", title=f'{r["params"]["storm"]:,} clients connect + snapshot')
        for a in (a1, a2):
            a.tick_params(axis="x", labelsize=8)
            a.grid(axis="y", alpha=0.3)
        fig.tight_layout()
        fig.savefig(out / "idle-storm.png", dpi=110)
        plt.close(fig)

    sim = r.get("sim")
    if isinstance(sim, list) and sim:
        fig, ax = plt.subplots(figsize=(7, 4))
        p = [x["processes"] for x in sim]
        ax.plot(p, [x["redisEgressPerSec"] for x in sim], "o-", label="Redis egress msgs/s")
        ax.plot(p, [x["gatewayQuotesInPerSecPerProcess"] for x in sim], "s-", label="quotes in per gateway /s")
        ax.plot(p, [x["delivered"] / 100 for x in sim], "^-", label="delivered/s / 100")
        ax.set(xlabel="gateway processes", title="Capacity sim: fixed clients and publish rate", xticks=p)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(out / "capacity-sim.png", dpi=110)
        plt.close(fig)

    proxy = r.get("proxy")
    if isinstance(proxy, dict) and proxy.get("summary"):
        plot_proxy(proxy, out)


PATH_COLORS = {"nginx": "#2ca02c", "nginx-1w": "#98df8a", "nginx-buffered": "#bcbd22", "haproxy": "#ff7f0e", "f5-nginx": "#9467bd"}


def plot_proxy(proxy: dict, out: Path) -> None:
    """proxy.png: latency each proxy added in each layout; its memory and CPU in the main one."""
    summary = proxy["summary"]
    scenarios = [s for s in proxy["scenarios"] if summary.get(s["id"])]
    label = lambda p: (proxy.get("proxies") or {}).get(p, {}).get("label", p)  # noqa: E731
    proxies = [p for p in ["nginx", "haproxy", "f5-nginx"] if any(p in summary[s["id"]] for s in scenarios)]
    fig, (a1, a2, a3) = plt.subplots(1, 3, figsize=(17, 5), gridspec_kw={"width_ratios": [2, 1.2, 1.2]})
    width = 0.8 / max(1, len(proxies))
    for i, p in enumerate(proxies):
        xs = [j + i * width for j in range(len(scenarios))]
        p50 = [(summary[s["id"]].get(p) or {}).get("addedP50") for s in scenarios]
        p99 = [(summary[s["id"]].get(p) or {}).get("addedP99") for s in scenarios]
        a1.bar(xs, [v if v is not None else 0 for v in p99], width, color=PATH_COLORS.get(p), alpha=0.45, label=f"{label(p)}: p99")
        a1.bar(xs, [v if v is not None else 0 for v in p50], width * 0.5, color=PATH_COLORS.get(p), label=f"{label(p)}: p50")
    a1.set_xticks([j + width * (len(proxies) - 1) / 2 for j in range(len(scenarios))],
                  [f'{textwrap.fill(s["title"], 22)}\n{s["deliveries"]:,}/s, {s["mode"]} client' for s in scenarios], fontsize=7)
    a1.axhline(0, color="grey", lw=0.8)
    a1.set_yscale("symlog", linthresh=5)
    a1.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    a1.set(ylabel="ms added vs direct (same round, median)", title="Latency added at a fixed delivery rate, per layout")
    a1.legend(fontsize=7)
    main = summary.get("main") or {}
    ps = [p for p in main if p != "direct"]
    names = [textwrap.fill(label(p), 16) for p in ps]
    kib = [(main[p].get("proxyBytesPerConn") or 0) / 1024 for p in ps]
    bars = a2.bar(names, kib, color=[PATH_COLORS.get(p) for p in ps])
    for b, v in zip(bars, kib):
        a2.annotate(f"{v:.1f}", (b.get_x() + b.get_width() / 2, b.get_height()), ha="center", va="bottom", fontsize=8)
    a2.set(ylabel="KiB RSS per proxied connection", title="Proxy memory (main layout)")
    us = [main[p].get("proxyUsPerFrame") or 0 for p in ps]
    bars = a3.bar(names, us, color=[PATH_COLORS.get(p) for p in ps])
    for b, v in zip(bars, us):
        a3.annotate(f"{v:.1f}", (b.get_x() + b.get_width() / 2, b.get_height()), ha="center", va="bottom", fontsize=8)
    gw = (main.get("direct") or {}).get("gatewayUsPerFrame")
    if gw:
        a3.axhline(gw, color="#1f77b4", ls=":", label=f"gateway, direct: {gw:.1f}")
        a3.legend(fontsize=7)
    a3.set(ylabel="proxy CPU µs per delivered frame", title="Proxy CPU (main layout)")
    for a in (a1, a2, a3):
        a.grid(axis="y", alpha=0.3)
    for a in (a2, a3):
        a.tick_params(axis="x", labelsize=6)
    fig.tight_layout()
    fig.savefig(out / "proxy.png", dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/benchmarks"))
